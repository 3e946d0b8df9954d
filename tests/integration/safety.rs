//! Regression tests for the ways safe code once reached memory it must not (issue 8's
//! holes), on the CPU backend: each is now a launch error, a kernel panic or a correct
//! result. The `.mir` cases of the verifier are in `filetests`; the compile errors in
//! `tests/ui/`.

use offload::prelude::*;
use offload::{Device, LaunchOptions};

fn cpu() -> LaunchOptions {
    let cpu = offload::devices()
        .iter()
        .position(|d| *d == Device::Cpu)
        .expect("the CPU is listed");
    LaunchOptions {
        device: Some(cpu),
        ..LaunchOptions::DEFAULT
    }
}

fn geometry(workgroups: u32, threads: u32) -> LaunchOptions {
    LaunchOptions {
        workgroup_dim: Some([workgroups, 1, 1]),
        thread_dim: Some([threads, 1, 1]),
        ..cpu()
    }
}

fn panic_message(e: Error) -> String {
    match e {
        Error::KernelPanic { message, .. } => message,
        other => panic!("expected a kernel panic, got {other:?}"),
    }
}

#[offload_kernel]
fn dynamic_len(mut out: Region<u64, Linear1D>) {
    let mut tile = Shared::<f32, 1>::new();
    let cache = DynShared::<u64>::new();
    tile.write(1.0);
    let n = cache.len();
    if let Some(v) = out.get_mut() {
        *v = n as u64;
    }
}

#[offload_kernel]
fn dynamic_read(mut out: Region<u64, Linear1D>) {
    let mut tile = Shared::<f32, 1>::new();
    let cache = DynShared::<u64>::new();
    tile.write(1.0);
    let first = cache[0];
    if let Some(v) = out.get_mut() {
        *v = first;
    }
}

/// Hole 1: without `dyn_cache` a `DynShared` view is empty, also after a static array.
#[test]
fn dynamic_shared_memory_without_dyn_cache_is_empty() {
    let mut out = vec![7u64; 1];
    dynamic_len(geometry(1, 1), &mut out).unwrap();
    assert_eq!(out, [0]);
    let err = dynamic_read(geometry(1, 1), &mut out).unwrap_err();
    assert_eq!(
        panic_message(err),
        "index out of bounds: the len is 0 but the index is 0"
    );
    assert_eq!(out, [0], "a panicking launch leaves the data as it was");
}

#[offload_kernel]
fn nth_slot(mut out: Region<u32, Linear1D>, nth: usize) {
    let mut tile = Shared::<u32, 8>::new();
    let t = thread_idx(0);
    tile.write(t as u32);
    if t == 2 {
        tile.write_nth(nth, 99);
    }
    sync_threads();
    let seen = tile[1];
    if let Some(v) = out.get_mut() {
        *v = seen;
    }
}

/// Hole 3: `nth * threads + rank` once wrapped onto another thread's slot.
#[test]
fn write_nth_cannot_wrap_onto_another_threads_slot() {
    let mut out = vec![0u32; 3];
    nth_slot(geometry(1, 3), &mut out, 0).unwrap();
    assert_eq!(out, [1, 1, 1]);
    let err = nth_slot(geometry(1, 3), &mut out, 0x5555_5555_5555_5555).unwrap_err();
    assert_eq!(
        panic_message(err),
        // `k` runs over the rounds: 8 / 3 whole ones and a partial one.
        "index out of bounds: the len is 3 but the index is 6148914691236517205"
    );
    assert_eq!(out, [1, 1, 1]);
}

#[offload_kernel]
fn huge_chunks(mut out: Region<u64, Chunked<4294901761>>) {
    if let Some(c) = out.get_mut() {
        c[0] = 1;
    }
}

/// Holes 4 and 6: a chunk start `thread * N` that would wrap is refused, on one device
/// and split over several.
#[test]
fn chunk_starts_that_would_wrap_are_refused() {
    let mut data = vec![0u64; 65552];
    let err = huge_chunks(geometry(4194369, 1024), &mut data).unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid launch: 4295033856 threads of `Chunked<4294901761>` would address more elements than fit in memory"
    );
    let split = LaunchOptions {
        all_devices: true,
        device: None,
        ..geometry(4194369, 1024)
    };
    let err = huge_chunks(split, &mut data).unwrap_err();
    assert!(matches!(err, Error::InvalidLaunch(_)), "{err}");
    assert!(data.iter().all(|&v| v == 0));
}

#[offload_device]
fn my_tid(offset: usize) -> usize {
    thread_idx(0) + offset
}

#[offload_kernel]
fn barrier_behind_device_fn(mut out: Region<f32, Linear1D>) {
    let t: usize = my_tid(0);
    if t == 0 {
        sync_threads();
    }
    if let Some(v) = out.get_mut() {
        *v = 1.0;
    }
}

#[offload_kernel]
fn subgroup_behind_device_fn(mut out: Region<f32, Linear1D>) {
    let t: usize = my_tid(0);
    let mut s = 0.0f32;
    if t < 16 {
        s = subgroup_sum(1.0f32);
    }
    if let Some(v) = out.get_mut() {
        *v = s;
    }
}

/// Hole 7: convergence is checked on the kernel with its device functions inlined.
#[test]
fn divergence_through_device_functions_is_refused() {
    let mut out = vec![0f32; 64];
    let err = barrier_behind_device_fn(cpu(), &mut out).unwrap_err();
    assert_eq!(
        err.to_string(),
        "kernel `barrier_behind_device_fn` could not be compiled: tests/integration/safety.rs:137:9: in kernel `barrier_behind_device_fn`: `sync_threads()` must be reached by every thread of the workgroup together, but it depends on a value that differs between threads (the branch at line 136, column 5)"
    );
    let err = subgroup_behind_device_fn(cpu(), &mut out).unwrap_err();
    assert!(
        err.to_string()
            .contains("`subgroup_sum` must be reached by every thread of the workgroup together"),
        "{err}"
    );
    assert!(out.iter().all(|&v| v == 0.0));
}

/// Hole 8: a zero workgroup size is refused before anything divides by it.
#[test]
fn zero_threads_per_workgroup_is_refused() {
    let mut out = vec![0u64; 64];
    let options = LaunchOptions {
        thread_dim: Some([0, 1, 1]),
        ..cpu()
    };
    let err = dynamic_len(options, &mut out).unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid launch: thread_dim [0, 1, 1] must not contain zero"
    );
}

/// Hole 9: more dynamic shared memory than a workgroup may have is refused.
#[test]
fn dynamic_shared_memory_past_the_limit_is_refused() {
    let mut out = vec![0u64; 1];
    let options = LaunchOptions {
        dyn_cache: 300_000,
        ..geometry(1, 1)
    };
    let err = dynamic_len(options, &mut out).unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid launch: dyn_cache = 300000 bytes is more than the CPU backend's 232448 bytes of dynamic shared memory per workgroup"
    );
}

/// A `const` item may size a `Shared` array at 0, which a literal may not.
const NONE: usize = 0;

#[offload_kernel]
fn empty_shared(mut y: Region<f32, Linear1D>) {
    let mut nothing = Shared::<f32, NONE>::new();
    nothing.write(1.0);
    sync_threads();
    if let Some(o) = y.get_mut() {
        *o = nothing.len() as f32;
    }
}

/// A `Shared` array that a `const` item sizes at 0 is refused where the kernel is linked,
/// and the launch's data stay as they were.
#[test]
fn shared_arrays_sized_at_zero_by_an_item_are_refused() {
    let mut y = vec![5f32; 64];
    let err = empty_shared(cpu(), &mut y).unwrap_err();
    assert!(
        err.to_string()
            .ends_with("a `Shared` array holds at least one element; this one is declared with 0"),
        "{err}"
    );
    assert_eq!(y, vec![5f32; 64]);
}

#[offload_kernel]
fn copy_stencil(mut out: Region<f32, Linear2D>, img: Region<f32, Stencil2D<1>>) {
    let p = img.get_clamped(0, 1);
    if let Some(v) = out.get_mut() {
        *v = p;
    }
}

/// Hole 10: a stencil and the output it is read for must have one shape.
#[test]
fn two_dimensional_regions_of_different_shapes_are_refused() {
    let img = vec![1f32; 64];
    let mut out = vec![0f32; 32];
    let err =
        copy_stencil(cpu(), Region::new_2d(&mut out, 4), Region::stencil(&img, 8)).unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid launch: the 2-D and 3-D regions of one launch must have one shape: argument 1 is 8 rows of 4, argument 2 is 8 rows of 8"
    );
    let mut out = vec![0f32; 64];
    copy_stencil(cpu(), Region::new_2d(&mut out, 8), Region::stencil(&img, 8)).unwrap();
    assert!(out.iter().all(|&v| v == 1.0));
}

#[offload_kernel]
fn element_count(mut out: Region<u64, Linear2D>) {
    let n = out.len();
    if let Some(v) = out.get_mut() {
        *v = n as u64;
    }
}

/// `len()` of a 2-D region is its element count (it was once the row count).
#[test]
fn two_dimensional_len_counts_every_element() {
    let mut out = vec![0u64; 12];
    element_count(cpu(), Region::new_2d(&mut out, 4)).unwrap();
    assert!(out.iter().all(|&v| v == 12), "{out:?}");
}

/// Hole 12: a compile that does not finish holds up only its own kernel. While one
/// kernel's compile waits, another kernel's first compile goes through, and a second
/// request for the waiting kernel waits for that compile rather than starting its own.
#[test]
fn a_slow_compile_holds_up_only_its_own_kernel() {
    use offload::CompileCache;
    use std::sync::{Arc, mpsc};
    use std::time::Duration;
    static CACHE: CompileCache<u32> = CompileCache::new();
    let slow = (1usize, "cpu".to_string());
    let (started, on_start) = mpsc::channel();
    let (release, on_release) = mpsc::channel::<()>();
    let first = std::thread::spawn({
        let slow = slow.clone();
        move || {
            CACHE.get_or_compile(slow, || {
                started.send(()).unwrap();
                on_release.recv().unwrap();
                Ok(7)
            })
        }
    });
    on_start.recv().unwrap();
    // Another kernel compiles while the first is stuck (a shared lock would hang here).
    let (done, on_done) = mpsc::channel();
    std::thread::spawn(move || {
        done.send(
            CACHE
                .get_or_compile((2, "cpu".into()), || Ok(9))
                .map(|v| *v),
        )
        .unwrap()
    });
    let other = on_done
        .recv_timeout(Duration::from_secs(60))
        .expect("another kernel's compile waited for the stuck one");
    assert_eq!(other.unwrap(), 9);
    // The same kernel again waits for the compile in progress and shares its result.
    let again = std::thread::spawn({
        let slow = slow.clone();
        move || CACHE.get_or_compile(slow, || panic!("compiled twice"))
    });
    release.send(()).unwrap();
    let a = first.join().unwrap().unwrap();
    let b = again.join().unwrap().unwrap();
    assert_eq!((*a, *b), (7, 7));
    assert!(Arc::ptr_eq(&a, &b));
}

/// A kernel's raw (`unsafe`) operations escape parts of the verifier, so MIR with them is
/// linked only from the descriptor the macro makes for a kernel written with `unsafe`
/// blocks: handed to the safe constructor, it is refused, and so is a raw operation in a
/// device function.
#[test]
fn raw_operations_are_taken_only_from_kernels_written_with_unsafe() {
    use offload::{DeviceFn, DynamicArg, KernelArg, KernelDescriptor, ScalarTy, Strategy};
    static FLAT: offload_mir::interp::Layout = offload_mir::interp::Layout {
        row_len: None,
        plane_rows: None,
        margin: 0,
        indices: None,
    };
    fn f32_region(data: &mut [u8]) -> KernelArg<'_> {
        KernelArg::dynamic(DynamicArg::Region {
            elem: ScalarTy::F32,
            strategy: Strategy::Linear1D,
            data,
            layout: &FLAT,
        })
        .unwrap()
    }
    const MIR: &str = "// offload-mir v1
kernel unchecked_copy(mut _1: Region<f32, Linear1D>, _2: &[f32]) {
    file \"forged.rs\";
    let mut _0: ();
    let mut _3: usize;
    let mut _4: f32;

    bb0: {
        _3 = RegionIndex(_1); // 1:1
        unsafe _4 = copy _2[_3]; // 2:1
        return; // 3:1
    }
}
";
    static FORGED: KernelDescriptor = KernelDescriptor::new("unchecked_copy", MIR, &[]);
    let mut out = vec![0u8; 4 * 8];
    let x = vec![0u8; 4 * 4];
    let mut args = vec![
        f32_region(&mut out),
        KernelArg::dynamic(DynamicArg::Slice {
            elem: ScalarTy::F32,
            data: &x,
        })
        .unwrap(),
    ];
    let error = offload::launch(&FORGED, cpu(), &mut args).unwrap_err();
    assert_eq!(
        error.to_string(),
        "kernel `unchecked_copy` could not be compiled: the kernel's MIR has raw (`unsafe`) operations, but its descriptor was not made for a kernel with `unsafe` blocks"
    );
    // The cause is typed, and the error's source.
    let Error::Compile { cause, .. } = &error else {
        panic!("a compile error: {error:?}");
    };
    assert_eq!(
        **cause,
        offload::CompileCause::Mir(offload::MirError::UndeclaredRaw)
    );
    let source = std::error::Error::source(&error).map(|s| s.to_string());
    assert_eq!(source, Some(cause.to_string()));

    static FORGED_DEVICE: DeviceFn = DeviceFn::new(
        "peek",
        &["// offload-mir v1
fn peek(_1: &[f32]) -> f32 {
    file \"forged.rs\";
    let mut _0: f32;
    let mut _2: usize;

    bb0: {
        _2 = const 9usize; // 1:1
        unsafe _0 = copy _1[_2]; // 2:1
        return; // 3:1
    }
}
"],
        &[],
    );
    const CALLER: &str = "// offload-mir v1
kernel calls_peek(mut _1: Region<f32, Linear1D>) {
    file \"forged.rs\";
    let mut _0: ();

    bb0: {
        return; // 1:1
    }
}
";
    static CALLS: KernelDescriptor =
        // SAFETY: this test's own MIR; the point is what the device function may hold.
        unsafe { KernelDescriptor::new_unsafe("calls_peek", CALLER, &[&FORGED_DEVICE]) };
    let mut out = vec![0u8; 4 * 8];
    let mut args = vec![f32_region(&mut out)];
    let error = offload::launch(&CALLS, cpu(), &mut args).unwrap_err();
    assert_eq!(
        error.to_string(),
        "kernel `calls_peek` could not be compiled: the MIR of device function `peek` has raw (`unsafe`) operations, which device functions cannot have"
    );
}

/// Launch arguments made at run time cannot give a region a layout its strategy does not
/// have: indices on a region that is not `Indexed` are not passed (its words stay those
/// of its strategy), and a 2-D region with planes is refused rather than addressed by
/// rows it does not have.
#[test]
fn dynamic_arguments_cannot_give_a_region_a_layout_of_another_strategy() {
    use offload::{DynamicArg, KernelArg, KernelDescriptor, ScalarTy, Strategy};
    use offload_mir::interp::Layout;
    const FILL: &str = "// offload-mir v1
kernel fill(mut _1: Region<f32, Linear1D>) {
    file \"forged.rs\";
    let mut _0: ();
    let mut _2: usize;
    let mut _3: usize;
    let mut _4: bool;

    bb0: {
        _2 = RegionIndex(_1); // 1:1
        _3 = Len(_1); // 1:1
        _4 = Lt(copy _2, copy _3); // 1:1
        switchInt(copy _4) -> [0: bb2, otherwise: bb1]; // 1:1
    }

    bb1: {
        _1[_2] = const 2f32; // 2:1
        goto -> bb2; // 2:1
    }

    bb2: {
        return; // 3:1
    }
}
";
    static FILL_1D: KernelDescriptor = KernelDescriptor::new("fill", FILL, &[]);
    // Indices on a `Linear1D` region: ignored, every element is the thread's own.
    let with_indices = Layout {
        indices: Some(vec![0, 0, 0]),
        ..Layout::default()
    };
    let mut out = vec![0u8; 4 * 5];
    let mut args = vec![
        KernelArg::dynamic(DynamicArg::Region {
            elem: ScalarTy::F32,
            strategy: Strategy::Linear1D,
            data: &mut out,
            layout: &with_indices,
        })
        .unwrap(),
    ];
    offload::launch(&FILL_1D, cpu(), &mut args).unwrap();
    drop(args);
    let got: Vec<f32> = out
        .chunks(4)
        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
        .collect();
    assert_eq!(got, [2.0; 5]);

    // Planes on a `Linear2D` region: refused.
    const FILL_2D_MIR: &str = "// offload-mir v1
kernel fill2(mut _1: Region<f32, Linear2D>) {
    file \"forged.rs\";
    let mut _0: ();

    bb0: {
        return; // 1:1
    }
}
";
    static FILL_2D: KernelDescriptor = KernelDescriptor::new("fill2", FILL_2D_MIR, &[]);
    let with_planes = Layout {
        row_len: Some(2),
        plane_rows: Some(100),
        ..Layout::default()
    };
    let mut out = vec![0u8; 4 * 4];
    let mut args = vec![
        KernelArg::dynamic(DynamicArg::Region {
            elem: ScalarTy::F32,
            strategy: Strategy::Linear2D,
            data: &mut out,
            layout: &with_planes,
        })
        .unwrap(),
    ];
    assert_eq!(
        offload::launch(&FILL_2D, cpu(), &mut args)
            .unwrap_err()
            .to_string(),
        "invalid launch: a `Linear2D` region has rows, not planes: build it with `Region::new_2d`"
    );
}

/// The shared locals `link` proves are read only where a thread wrote (so the lowering
/// need not zero them), by name, for the kernel in `source`.
fn written_before_read(source: &str) -> Vec<String> {
    let item: syn::ItemFn = syn::parse_str(source).expect("the kernel parses");
    let body = offload_translate::translate_instance(&item, "k.rs", &[]).expect("translates");
    let linked = offload_mir::link(&body, &[]).expect("links");
    let names = |l: &offload_mir::Local| {
        let decl = &linked.body().locals[l.index()];
        decl.debug.as_ref().map(|d| d.0.clone()).unwrap_or_default()
    };
    linked
        .proven()
        .written_before_read
        .iter()
        .map(names)
        .collect()
}

/// Shared memory is zeroed when a workgroup starts unless every read provably sees a
/// slot a thread wrote: each thread writes its own slot before the first barrier, and
/// reads come after it, below the thread count.
#[test]
fn shared_arrays_read_only_where_written_need_no_zeros() {
    let own_then_below = "fn k(mut y: Region<f32, Linear1D>) {
        let mut tile = Shared::<f32, 256>::new();
        let t = thread_rank();
        tile.write(1.0);
        sync_threads();
        let mut v = tile[t];
        if t >= 3 { v += tile[t - 3]; }
        if t + 1 < workgroup_dim(0) { v += tile[t + 1]; }
        if let Some(e) = y.get_mut() { *e = v; }
    }";
    assert_eq!(written_before_read(own_then_below), ["tile"]);
    // A slot past the thread count (`32 + t`) may be one nobody wrote.
    let past_the_threads = "fn k(mut y: Region<f32, Linear1D>) {
        let mut tile = Shared::<f32, 64>::new();
        let t = thread_rank();
        tile.write(1.0);
        sync_threads();
        let v = tile[(32 + t) % 64];
        if let Some(e) = y.get_mut() { *e = v; }
    }";
    assert!(written_before_read(past_the_threads).is_empty());
    // Written on one path only.
    let in_a_branch = "fn k(mut y: Region<f32, Linear1D>) {
        let mut tile = Shared::<f32, 256>::new();
        let t = thread_rank();
        if workgroup_idx(0) == 0 { tile.write(1.0); }
        sync_threads();
        let v = tile[t];
        if let Some(e) = y.get_mut() { *e = v; }
    }";
    assert!(written_before_read(in_a_branch).is_empty());
    // Read before any barrier.
    let first_phase_read = "fn k(mut y: Region<f32, Linear1D>) {
        let tile = Shared::<f32, 256>::new();
        let v = tile[0];
        if let Some(e) = y.get_mut() { *e = v; }
    }";
    assert!(written_before_read(first_phase_read).is_empty());
    // Never read: nothing to zero.
    let never_read = "fn k(mut y: Region<f32, Linear1D>) {
        let mut tile = Shared::<f32, 256>::new();
        tile.write(1.0);
        if let Some(e) = y.get_mut() { *e = 2.0; }
    }";
    assert_eq!(written_before_read(never_read), ["tile"]);
}
