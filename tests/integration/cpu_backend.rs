//! Kernels on the CPU backend, which runs the lowered code, compared with host loops.

use offload::prelude::*;
use offload::{Device, LaunchOptions};

#[offload_kernel]
fn saxpy(mut y: Region<f32, Linear1D>, x: &[f32], a: f32) {
    let i = y.index();
    if let Some(v) = y.get_mut() {
        *v = a * x[i] + *v;
    }
}

/// Reads past the end of `x` on purpose for the last thread.
#[offload_kernel]
fn shifted_copy(mut y: Region<i32, Linear1D>, x: &[i32]) {
    let i = y.index();
    if let Some(v) = y.get_mut() {
        *v = x[i + 1];
    }
}

fn on_cpu() -> LaunchOptions {
    let cpu = offload::devices()
        .iter()
        .position(|d| *d == Device::Cpu)
        .expect("the CPU is listed");
    LaunchOptions {
        device: Some(cpu),
        ..LaunchOptions::DEFAULT
    }
}

#[test]
fn saxpy_matches_host_loop_at_odd_size() {
    let n = 1_000_003;
    let x: Vec<f32> = (0..n).map(|i| (i % 1013) as f32 * 0.37 - 50.0).collect();
    let y0: Vec<f32> = (0..n).map(|i| (i % 97) as f32 * 1.25).collect();
    let mut y = y0.clone();
    saxpy(on_cpu(), &mut y, &x, 2.5).unwrap();
    for i in 0..n {
        assert_eq!(y[i], 2.5 * x[i] + y0[i], "element {i}");
    }
}

#[test]
fn out_of_bounds_read_is_a_kernel_panic_and_leaves_data_untouched() {
    let x: Vec<i32> = (0..1000).collect();
    let mut y = vec![-7i32; 1000];
    let err = shifted_copy(on_cpu(), &mut y, &x).unwrap_err();
    match &err {
        Error::KernelPanic {
            kernel,
            line,
            message,
            ..
        } => {
            assert_eq!(kernel, "shifted_copy");
            assert_eq!(*line, 19);
            assert_eq!(
                message,
                "index out of bounds: the len is 1000 but the index is 1000"
            );
        }
        other => panic!("expected a kernel panic, got {other:?}"),
    }
    assert!(
        err.to_string()
            .starts_with("kernel `shifted_copy` panicked at "),
        "{err}"
    );
    assert!(
        err.to_string().ends_with(
            "cpu_backend.rs:19:14: index out of bounds: the len is 1000 but the index is 1000"
        ),
        "{err}"
    );
    assert!(
        y.iter().all(|&v| v == -7),
        "a failed launch must not copy results back"
    );
}

#[test]
fn offload_macro_launches_and_try_offload_returns_errors() {
    let x = vec![1.0f32; 300];
    let mut y = vec![1.0f32; 300];
    let cpu = offload::devices().len() - 1;
    offload! { kernel = saxpy, args = (&mut y, &x, 2.0f32), device = cpu };
    assert!(y.iter().all(|&v| v == 3.0));
    let err =
        try_offload! { kernel = saxpy, args = (&mut y, &x, 2.0f32), device = 99 }.unwrap_err();
    assert_eq!(
        err,
        Error::NoSuchDevice {
            index: 99,
            available: offload::devices().len()
        }
    );
}

#[test]
fn explicit_geometry_is_checked() {
    let x = vec![1.0f32; 64];
    let mut y = vec![0.0f32; 64];
    let cpu = offload::devices().len() - 1;
    let err = try_offload! { kernel = saxpy, args = (&mut y, &x, 1.0f32), thread_dim = [32, 2, 1], workgroup_dim = [1, 1, 1], device = cpu }
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid launch: a `Linear1D` region needs a one-dimensional launch, got workgroup_dim [1, 1, 1] and thread_dim [32, 2, 1]: \
         threads that differ only in y or z would own the same element"
    );
    let err = try_offload! { kernel = saxpy, args = (&mut y, &x, 1.0f32), thread_dim = [2048, 1, 1], device = cpu }.unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid launch: thread_dim [2048, 1, 1] has 2048 threads per workgroup; the limit is 1024"
    );
    let err = try_offload! { kernel = saxpy, args = (&mut y, &x, 1.0f32), workgroup_dim = [0, 1, 1], device = cpu }.unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid launch: workgroup_dim [0, 1, 1] must not contain zero"
    );
    // Fewer threads than elements is allowed: the rest are left alone.
    try_offload! { kernel = saxpy, args = (&mut y, &x, 1.0f32), workgroup_dim = [1, 1, 1], thread_dim = [16, 1, 1], device = cpu }.unwrap();
    assert!(y[..16].iter().all(|&v| v == 1.0) && y[16..].iter().all(|&v| v == 0.0));
}

#[test]
fn empty_region_is_a_valid_launch() {
    let x: Vec<f32> = vec![];
    let mut y: Vec<f32> = vec![];
    saxpy(on_cpu(), &mut y, &x, 1.0).unwrap();
}

#[test]
fn device_selection_strings() {
    let gpu = Device::Cuda {
        ordinal: 0,
        name: "test".into(),
        compute_capability: (9, 0),
    };
    let all = vec![gpu.clone(), Device::Cpu];
    assert_eq!(offload::parse_selection("cpu", &all), Ok(Device::Cpu));
    assert_eq!(offload::parse_selection("cuda:0", &all), Ok(gpu));
    assert_eq!(
        offload::parse_selection("cuda:3", &all)
            .unwrap_err()
            .to_string(),
        "OFFLOAD_DEVICE=`cuda:3`: no CUDA device 3; this machine has 1"
    );
    assert_eq!(
        offload::parse_selection("tpu", &all)
            .unwrap_err()
            .to_string(),
        "OFFLOAD_DEVICE=`tpu`: expected `cpu`, `cuda:N` or `hip:N`"
    );
}

#[test]
fn the_cpu_is_always_a_device() {
    assert_eq!(offload::devices().last(), Some(&Device::Cpu));
}

#[offload_kernel]
fn fill_2d(mut out: Region<f32, Linear2D>) {
    let r = out.row();
    if let Some(v) = out.get_mut() {
        *v = r as f32;
    }
}

#[offload_kernel]
fn fill_chunks(mut out: Region<f32, Chunked<4>>) {
    if let Some(c) = out.get_mut() {
        c[0] = 1.0;
    }
}

#[offload_kernel]
fn read_stencil(mut out: Region<f32, Linear2D>, img: Region<f32, Stencil2D<1>>) {
    let p = img.get_clamped(0, 0);
    if let Some(v) = out.get_mut() {
        *v = p;
    }
}

#[test]
fn every_strategy_refuses_sharing_geometry_and_bad_shapes() {
    let cpu = offload::devices().len() - 1;
    let mut data = vec![0f32; 12];
    let err =
        try_offload! { kernel = fill_2d, args = (Region::new_2d(&mut data, 5)), device = cpu }
            .unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid launch: a `Linear2D` region of 12 elements cannot be laid out in rows of 5"
    );
    let err =
        try_offload! { kernel = fill_2d, args = (Region::new_2d(&mut data, 0)), device = cpu }
            .unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid launch: a `Linear2D` region of 12 elements cannot be laid out in rows of 0"
    );
    let err = try_offload! { kernel = fill_2d, args = (Region::new(&mut data)), device = cpu }
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid launch: a `Linear2D` region needs a row length: build it with `Region::new_2d`"
    );
    let err = try_offload! { kernel = fill_2d, args = (Region::new_2d(&mut data, 4)), thread_dim = [4, 4, 2], device = cpu }.unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid launch: a `Linear2D` region needs a launch without z, got workgroup_dim [1, 1, 1] and thread_dim [4, 4, 2]: \
         threads that differ only in z would own the same element"
    );
    let err = try_offload! { kernel = fill_chunks, args = (&mut data), workgroup_dim = [1, 2, 1], device = cpu }.unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid launch: a `Chunked<4>` region needs a one-dimensional launch, got workgroup_dim [1, 2, 1] and thread_dim [256, 1, 1]: \
         threads that differ only in y or z would own the same element"
    );
    let img = vec![1f32; 12];
    let err = try_offload! { kernel = read_stencil, args = (Region::new_2d(&mut data, 4), Region::stencil(&img, 5)), device = cpu }
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid launch: a `Stencil2D<1>` region of 12 elements cannot be laid out in rows of 5"
    );
    assert!(
        data.iter().all(|&v| v == 0.0),
        "refused launches must not touch the data"
    );
    try_offload! { kernel = fill_2d, args = (Region::new_2d(&mut data, 4)), device = cpu }.unwrap();
    assert_eq!(data, [0., 0., 0., 0., 1., 1., 1., 1., 2., 2., 2., 2.]);
}

#[offload_device]
fn ping(x: i32) -> i32 {
    if x > 0 { pong(x - 1) } else { 0 }
}

#[offload_device]
fn pong(x: i32) -> i32 {
    if x > 0 { ping(x - 1) } else { 1 }
}

#[offload_kernel]
fn bounce(mut out: Region<i32, Linear1D>) {
    if let Some(v) = out.get_mut() {
        *v = ping(3);
    }
}

#[test]
fn recursion_through_device_functions_is_a_clear_error() {
    let mut out = vec![0i32; 4];
    let err =
        try_offload! { kernel = bounce, args = (&mut out), device = offload::devices().len() - 1 }
            .unwrap_err();
    assert_eq!(
        err.to_string(),
        "kernel `bounce` could not be compiled: tests/integration/cpu_backend.rs: in kernel `bounce`: device functions cannot recurse: ping → pong → ping"
    );
}

/// `copy_from_slice` writes a buffer in place; data of another length, or a split with a
/// granule of 0, is a buffer error, not a launch error.
#[test]
fn device_buffers_refuse_data_that_does_not_fit() {
    let mut buf = DeviceBuffer::from_slice(&Device::Cpu, &[1.0f32, 2.0, 3.0]).unwrap();
    buf.copy_from_slice(&[4.0, 5.0, 6.0]).unwrap();
    assert_eq!(buf.to_vec().unwrap(), [4.0, 5.0, 6.0]);
    let e = buf.copy_from_slice(&[1.0, 2.0]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "invalid buffer operation: cannot copy 2 elements into a buffer of 3"
    );
    assert_eq!(buf.to_vec().unwrap(), [4.0, 5.0, 6.0]);
    let e = SplitBuffer::scatter(&[1u32, 2, 3], 0).err().unwrap();
    assert_eq!(
        e.to_string(),
        "invalid buffer operation: a split buffer's granule must be at least 1"
    );
}

/// Literals in generic kernels: `T::from_f64`, `T::from_i64`, `Num::ZERO`/`ONE`, and
/// `Float::clamp`, per instance type.
#[offload_kernel]
fn smoothstep<T: Float>(mut y: Region<T, Linear1D>, x: &[T]) {
    let i = y.index();
    if let Some(v) = y.get_mut() {
        let t = ((x[i] - T::from_f64(0.25)) * T::from_i64(2)).clamp(T::ZERO, T::ONE);
        *v = t * t * (T::from_f64(3.0) - T::from_i64(2) * t);
    }
}

#[offload_kernel]
fn scaled<T: Int>(mut y: Region<T, Linear1D>) {
    if let Some(v) = y.get_mut() {
        *v = *v * T::from_i64(3) + T::ONE;
    }
}

#[test]
fn generic_kernels_take_literals_of_their_type() {
    fn host(x: f64) -> f64 {
        let t = ((x - 0.25) * 2.0).clamp(0.0, 1.0);
        t * t * (3.0 - 2.0 * t)
    }
    let cpu = offload::devices().len() - 1;
    let x32: Vec<f32> = (0..200).map(|i| i as f32 / 100.0 - 0.5).collect();
    let mut y32 = vec![0f32; x32.len()];
    offload! { kernel = smoothstep::<f32>, args = (&mut y32, &x32), device = cpu };
    for (y, x) in y32.iter().zip(&x32) {
        assert!((*y as f64 - host(*x as f64)).abs() < 1e-6, "{x}: {y}");
    }
    let x64: Vec<f64> = x32.iter().map(|v| *v as f64).collect();
    let mut y64 = vec![0f64; x64.len()];
    offload! { kernel = smoothstep::<f64>, args = (&mut y64, &x64), device = cpu };
    for (y, x) in y64.iter().zip(&x64) {
        assert!((y - host(*x)).abs() < 1e-12, "{x}: {y}");
    }
    let mut n: Vec<u8> = (0..100).collect();
    offload! { kernel = scaled::<u8>, args = (&mut n,), device = cpu };
    let want: Vec<u8> = (0..100u8)
        .map(|v| v.wrapping_mul(3).wrapping_add(1))
        .collect();
    assert_eq!(n, want);
}

#[offload_kernel]
fn write_both(mut on_device: Region<f32, Linear1D>, mut on_host: Region<f32, Linear1D>) {
    let i = on_device.index();
    if let Some(d) = on_device.get_mut() {
        *d += 1.0;
    }
    if let Some(h) = on_host.get_mut() {
        *h = i as f32 * 2.0;
    }
}

/// A launch writing a device buffer and host data: only the host data has a scratch
/// copy, and each copy goes back to its own region. Large regions take scratch memory
/// kept from earlier launches, which must not leak into a later one.
#[test]
fn device_buffers_and_host_regions_write_back_to_their_own_places() {
    let n = 300_000;
    let mut on_device = DeviceBuffer::from_slice(&Device::Cpu, &vec![1.0f32; n]).unwrap();
    for round in 0..3 {
        let mut on_host = vec![-1.0f32; n - round * 1000];
        write_both(on_cpu(), &mut on_device, &mut on_host).unwrap();
        let want: Vec<f32> = (0..on_host.len()).map(|i| i as f32 * 2.0).collect();
        assert_eq!(on_host, want);
    }
    let want: Vec<f32> = vec![4.0; n];
    assert_eq!(on_device.to_vec().unwrap(), want);
}

/// Reverses each workgroup's block of `x` through shared memory: thread `t` reads what
/// thread `n - 1 - t` wrote before the barrier (-1 past the end of `x`).
#[offload_kernel]
fn reverse_blocks(mut y: Region<i32, Linear1D>, x: &[i32]) {
    let mut tile = Shared::<i32, 1024>::new();
    let t = thread_idx(0);
    let n = workgroup_dim(0);
    let at = workgroup_idx(0) * n + t;
    tile.write(x.get(at).copied().unwrap_or(-1));
    sync_threads();
    if let Some(v) = y.get_mut() {
        *v = tile[n - 1 - t];
    }
}

/// The CPU code is compiled for each launch's workgroup size (its thread loops count to
/// a constant); two sizes in one process each get their own code, and both match the
/// host.
#[test]
fn each_workgroup_size_gets_its_own_cpu_code() {
    let len = 1000;
    let x: Vec<i32> = (0..len as i32).map(|i| i * 3 + 1).collect();
    for size in [64usize, 128, 64] {
        let mut y = vec![0i32; len];
        let options = LaunchOptions {
            thread_dim: Some([size as u32, 1, 1]),
            ..on_cpu()
        };
        reverse_blocks(options, &mut y, &x).unwrap();
        for (i, got) in y.iter().enumerate() {
            let mirrored = i / size * size + (size - 1 - i % size);
            let want = x.get(mirrored).copied().unwrap_or(-1);
            assert_eq!(*got, want, "element {i} with {size} threads per workgroup");
        }
    }
}

/// Host regions of one-dimensional launches are written where they live, after a backup
/// of what each workgroup owns: a panic puts exactly that back, and elements no workgroup
/// owns are neither written nor restored.
#[test]
fn in_place_host_regions_are_all_or_nothing() {
    let n = 5000;
    let covering = LaunchOptions {
        workgroup_dim: Some([16, 1, 1]),
        thread_dim: Some([256, 1, 1]),
        ..on_cpu()
    };
    // 4096 threads own y[..4096]; the last reads x[4096], past a slice of 4096.
    let short: Vec<i32> = (0..4096).collect();
    let mut y = vec![-7i32; n];
    let e = shifted_copy(covering, &mut y, &short).unwrap_err();
    assert!(
        e.to_string()
            .contains("the len is 4096 but the index is 4096"),
        "{e}"
    );
    assert_eq!(y, vec![-7; n]);
    let long: Vec<i32> = (0..4097).collect();
    shifted_copy(covering, &mut y, &long).unwrap();
    let want: Vec<i32> = (0..n as i32)
        .map(|i| if i < 4096 { i + 1 } else { -7 })
        .collect();
    assert_eq!(y, want);
}
