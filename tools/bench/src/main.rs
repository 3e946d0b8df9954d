//! Benchmarks for the H200 (or any CUDA machine; see `tools/bench/run-gpu.sh`).
//!
//! `offload-bench saxpy [N] [REPS]` checks `offload!` saxpy against a host reference at
//! size N, then times the kernel our compiler generated (the same PTX the runtime loads)
//! with CUDA events on device-resident data, next to a device-to-device copy of the same
//! bytes. The CUDA C++ baseline (`cuda/saxpy.cu`) prints the same table rows, so one run
//! of the script puts them side by side.
//!
//! `offload-bench reduce [N] [REPS]` (a sum with a grid-stride loop, warp shuffles, shared
//! memory and one atomic per workgroup) and `offload-bench matmul [N] [REPS]` (16×16
//! shared-memory tiles) do the same against `cuda/reduce.cu` and `cuda/matmul.cu`.
//!
//! `offload-bench suite PTX_PATH OUT_DIR [REPS]` runs the benchmark suite: STREAM copy,
//! scale, add and triad, a dot product, a sum, the FIR filters, a 3-D 7-point stencil, a
//! 2-D Jacobi sweep, a 5-point stencil, f32 and f64 tiled matrix products (with cuBLAS
//! as the roof), a block scan, a histogram and a row softmax, each at a large size and
//! at 2^20 elements (GEMM 1024), our kernel next to its CUDA C++ twin from
//! `cuda/suite.cu`, built to PTX_PATH by `nvcc -O3 -arch=sm_90 -ptx`. Both sides run in
//! this process on the same device-resident data with the same timing. It prints a
//! table and writes `suite.json`, `ratio.svg` and `bandwidth.svg` into OUT_DIR (see
//! `suite.rs`).
//!
//! `offload-bench suite-check` needs no GPU: it runs each of the suite's kernels at a
//! small size through `try_offload!` on the default device (the CPU backend without a
//! GPU) against the same host references, ending with `N passed, M failed`.
//!
//! `offload-bench fuzz [START] [END]` runs the differential fuzzer on the GPU (see
//! `fuzz.rs`).
//!
//! `offload-bench examples` runs every example of `examples/` on the default device (see
//! `examples.rs`); `tools/bench/sanitize.sh` runs it, `conformance` and `fuzz` under
//! NVIDIA's compute-sanitizer.
//!
//! `offload-bench compile-time [match|else-if] [N...]` needs no GPU: it times the compiler
//! itself on kernels of N `match` arms or `else if` branches (see `compile_time.rs`).
//!
//! `offload-bench cpu [N]` needs no GPU: the CPU backend next to rayon running the same
//! algorithms (see `cpu.rs`).
//!
//! `offload-bench tensor-gemm [REPS] [N...]` times `examples/gemm_bf16.rs`'s tensor-core
//! product next to cuBLAS's (see `tensor.rs`).
//!
//! `offload-bench launch` measures only the launch overhead (three times), for profiling.
//!
//! `offload-bench first-launch` times a program's first launch of a kernel (compile or
//! disk cache, load, run) next to its second, on the default device.

use anyhow::{Result, bail};
use cudarc::driver::{CudaContext, CudaSlice, LaunchConfig, PushKernelArg};
use offload::prelude::*;
use std::time::Instant;

mod compile_time;
mod cpu;
mod examples;
mod fuzz;
mod launch;
mod nccl;
mod streams;
mod suite;
mod tensor;

#[offload_kernel]
fn saxpy(mut y: Region<f32, Linear1D>, x: &[f32], a: f32) {
    let i = y.index();
    if let Some(v) = y.get_mut() {
        *v = a * x[i] + *v;
    }
}

/// Reads one past the end of `x` in its last thread, to exercise device panics.
#[offload_kernel]
fn shifted_copy(mut y: Region<i32, Linear1D>, x: &[i32]) {
    let i = y.index();
    if let Some(v) = y.get_mut() {
        *v = x[i + 1];
    }
}

/// An inclusive scan of each 256-element block in shared memory (Hillis and Steele:
/// eight steps, two barriers each), for the CPU backend's barriers.
#[offload_kernel]
fn block_scan(mut y: Region<f32, Linear1D>, x: &[f32]) {
    let mut tile = Shared::<f32, 256>::new();
    let t = thread_rank();
    tile.write(x.get(y.index()).copied().unwrap_or(0.0));
    sync_threads();
    let mut s = 1;
    while s < 256 {
        let add = if t >= s { tile[t - s] } else { 0.0 };
        sync_threads();
        tile[t] += add;
        sync_threads();
        s *= 2;
    }
    if let Some(v) = y.get_mut() {
        *v = tile[t];
    }
}

/// The same algorithm as `cuda/reduce.cu`: each thread sums a grid-stride slice, each
/// warp sums its threads' values, and one warp sums the warp totals.
#[offload_kernel]
fn reduce_sum(total: Atomic<f32>, x: &[f32], stride: usize) {
    let mut partial = Shared::<f32, 256>::new();
    let mut acc = 0.0f32;
    let mut j = workgroup_idx(0) * workgroup_dim(0) + thread_idx(0);
    while j < x.len() {
        acc += x[j];
        j += stride;
    }
    partial.write(subgroup_sum(acc));
    sync_threads();
    let width = subgroup_size();
    let lane = subgroup_lane();
    let mine = if lane * width < workgroup_dim(0) {
        partial[lane * width]
    } else {
        0.0
    };
    let block = subgroup_sum(mine);
    if thread_idx(0) == 0 {
        total.fetch_add(0, block);
    }
}

/// The same algorithm as `cuda/matmul.cu`: 16×16 tiles of A and B in shared memory,
/// the product written with `mul_add` (what nvcc contracts `a * b + c` into).
#[offload_kernel]
fn matmul(mut c: Region<f32, Linear2D>, a: &[f32], b: &[f32], n: usize) {
    let mut ta = Shared::<f32, 256>::new();
    let mut tb = Shared::<f32, 256>::new();
    let tx = thread_idx(0);
    let ty = thread_idx(1);
    let row = c.row();
    let col = c.col();
    let mut acc = 0.0f32;
    let mut t = 0;
    while t < n {
        ta.write(if row < n && t + tx < n {
            a[row * n + t + tx]
        } else {
            0.0
        });
        tb.write(if col < n && t + ty < n {
            b[(t + ty) * n + col]
        } else {
            0.0
        });
        sync_threads();
        for k in 0..16 {
            acc = ta[ty * 16 + k].mul_add(tb[k * 16 + tx], acc);
        }
        sync_threads();
        t += 16;
    }
    if let Some(v) = c.get_mut() {
        *v = acc;
    }
}

/// `matmul` as a new user writes its inner loop, `acc += a * b`: a GPU fuses the
/// product and the sum into one FMA by default, as nvcc does.
#[offload_kernel]
fn matmul_plain(mut c: Region<f32, Linear2D>, a: &[f32], b: &[f32], n: usize) {
    let mut ta = Shared::<f32, 256>::new();
    let mut tb = Shared::<f32, 256>::new();
    let tx = thread_idx(0);
    let ty = thread_idx(1);
    let row = c.row();
    let col = c.col();
    let mut acc = 0.0f32;
    let mut t = 0;
    while t < n {
        ta.write(if row < n && t + tx < n {
            a[row * n + t + tx]
        } else {
            0.0
        });
        tb.write(if col < n && t + ty < n {
            b[(t + ty) * n + col]
        } else {
            0.0
        });
        sync_threads();
        for k in 0..16 {
            acc += ta[ty * 16 + k] * tb[k * 16 + tx];
        }
        sync_threads();
        t += 16;
    }
    if let Some(v) = c.get_mut() {
        *v = acc;
    }
}

/// `matmul_plain` with fusing turned off: a multiply and an add, each rounded.
#[offload_kernel(fma = false)]
fn matmul_rounded(mut c: Region<f32, Linear2D>, a: &[f32], b: &[f32], n: usize) {
    let mut ta = Shared::<f32, 256>::new();
    let mut tb = Shared::<f32, 256>::new();
    let tx = thread_idx(0);
    let ty = thread_idx(1);
    let row = c.row();
    let col = c.col();
    let mut acc = 0.0f32;
    let mut t = 0;
    while t < n {
        ta.write(if row < n && t + tx < n {
            a[row * n + t + tx]
        } else {
            0.0
        });
        tb.write(if col < n && t + ty < n {
            b[(t + ty) * n + col]
        } else {
            0.0
        });
        sync_threads();
        for k in 0..16 {
            acc += ta[ty * 16 + k] * tb[k * 16 + tx];
        }
        sync_threads();
        t += 16;
    }
    if let Some(v) = c.get_mut() {
        *v = acc;
    }
}

/// The same algorithm as `cuda/fir.cu`: a 16-tap FIR filter, the taps from a slice
/// (CUDA: `__constant__`). `mul_add`, as nvcc contracts the product and sum.
#[offload_kernel]
fn fir16(mut y: Region<f32, Linear1D>, x: &[f32], taps: &[f32]) {
    let i = y.index();
    if let Some(v) = y.get_mut() {
        let mut acc = 0.0f32;
        for k in 0..16 {
            acc = taps[k].mul_add(x[i + k], acc);
        }
        *v = acc;
    }
}

/// The taps of `fir16_const` and the `fir` benchmark: `(k % 5) / 8 - 1/4`.
const FIR_TAPS: [f32; 16] = [
    -0.25, -0.125, 0.0, 0.125, 0.25, -0.25, -0.125, 0.0, 0.125, 0.25, -0.25, -0.125, 0.0, 0.125,
    0.25, -0.25,
];

/// `fir16` with the taps a constant array of the kernel.
#[offload_kernel]
fn fir16_const(mut y: Region<f32, Linear1D>, x: &[f32]) {
    const TAPS: [f32; 16] = [
        -0.25, -0.125, 0.0, 0.125, 0.25, -0.25, -0.125, 0.0, 0.125, 0.25, -0.25, -0.125, 0.0,
        0.125, 0.25, -0.25,
    ];
    let i = y.index();
    if let Some(v) = y.get_mut() {
        let mut acc = 0.0f32;
        for k in 0..16 {
            acc = TAPS[k].mul_add(x[i + k], acc);
        }
        *v = acc;
    }
}

const BLOCK: u32 = 256;

/// A kernel our compiler generated, loaded into the driver for timing by hand, with the
/// panic buffer its launches report into.
struct RawKernel {
    ctx: std::sync::Arc<CudaContext>,
    stream: std::sync::Arc<cudarc::driver::CudaStream>,
    func: cudarc::driver::CudaFunction,
    panic: CudaSlice<i64>,
}

/// One kernel parameter's words in the kernel ABI.
enum Word {
    /// A region, slice or atomic of `len` elements at an address.
    Memref(u64, usize),
    /// A 2-D region at an address: rows, row length.
    Memref2d(u64, usize, usize),
    /// A 2-D region or stencil at an address: rows, row length, its interior's margin.
    Region2d(u64, usize, usize, usize),
    /// A 3-D region at an address: planes, rows per plane, row length, its interior's
    /// margin.
    Region3d(u64, usize, usize, usize, usize),
    /// A scalar's bits.
    Scalar(u64),
}

impl RawKernel {
    /// Compiles the kernel for the first GPU and workgroups of `block_size` threads (as
    /// `offload!` does for its launch) and loads it; with `report`, prints how long each
    /// took.
    fn load(
        descriptor: &'static offload::KernelDescriptor,
        block_size: [u32; 3],
        report: bool,
    ) -> Result<RawKernel> {
        RawKernel::load_resident(descriptor, block_size, None, report)
    }

    /// [`RawKernel::load`], compiled for `resident` workgroups per multiprocessor
    /// (`LaunchOptions::resident_workgroups`).
    fn load_resident(
        descriptor: &'static offload::KernelDescriptor,
        block_size: [u32; 3],
        resident: Option<u32>,
        report: bool,
    ) -> Result<RawKernel> {
        RawKernel::load_in(
            CudaContext::new(0)?,
            descriptor,
            block_size,
            resident,
            report,
        )
    }

    /// [`RawKernel::load_resident`] into `ctx`, the first GPU's context, so that the
    /// caller's buffers, other modules and libraries share its stream (`suite`).
    fn load_in(
        ctx: std::sync::Arc<CudaContext>,
        descriptor: &'static offload::KernelDescriptor,
        block_size: [u32; 3],
        resident: Option<u32>,
        report: bool,
    ) -> Result<RawKernel> {
        let Some(chip) = first_gpu_chip() else {
            bail!("no CUDA device");
        };
        let target = offload_lowering::GpuTarget {
            chip: chip.clone(),
            block_size: Some(block_size),
            resident_workgroups: resident,
            // The benchmarks' launches start at workgroup 0 and never fold; under a
            // register budget the runtime compiles for any launch (see `backend/cuda.rs`).
            whole_grid: resident.is_none(),
            ..Default::default()
        };
        let t = Instant::now();
        let ptx = offload_lowering::compile_ptx(descriptor.body()?, &target)?;
        if report {
            let compile_ms = t.elapsed().as_secs_f64() * 1e3;
            println!("compile: MIR -> PTX ({chip}) in {compile_ms:.1} ms");
        }
        let stream = ctx.default_stream();
        let t = Instant::now();
        let module = ctx.load_module(cudarc::nvrtc::Ptx::from_src(ptx.ptx.as_str()))?;
        let func = module.load_function(&ptx.entry)?;
        if report {
            println!(
                "load: PTX -> module (driver JIT) in {:.1} ms",
                t.elapsed().as_secs_f64() * 1e3
            );
        }
        let panic = stream.alloc_zeros(offload_mir::abi::PANIC_BUFFER_WORDS)?;
        Ok(RawKernel {
            ctx,
            stream,
            func,
            panic,
        })
    }

    /// Device address of a buffer, for the kernel ABI's words.
    fn addr<T>(&self, s: &CudaSlice<T>) -> u64 {
        cudarc::driver::DevicePtr::device_ptr(s, &self.stream).0
    }

    /// The kernel ABI's words for `params`, then the panic buffer and the hidden GPU
    /// parameters of a launch of `workgroups` workgroups (x, y, z).
    fn words(&self, params: &[Word], workgroups: [u32; 3]) -> Vec<u64> {
        use offload_mir::abi::{
            PANIC_BUFFER_WORDS, gpu_hidden_words, memref_1d, region_2d, region_3d,
        };
        let mut words = Vec::new();
        for p in params {
            match *p {
                Word::Memref(at, len) => words.extend(memref_1d(at, len as u64)),
                Word::Memref2d(at, rows, row_len) => {
                    words.extend(region_2d(at, rows as u64, row_len as u64, 0))
                }
                Word::Region2d(at, rows, row_len, margin) => {
                    words.extend(region_2d(at, rows as u64, row_len as u64, margin as u64))
                }
                Word::Region3d(at, planes, rows, row_len, margin) => words.extend(region_3d(
                    at,
                    planes as u64,
                    rows as u64,
                    row_len as u64,
                    margin as u64,
                )),
                Word::Scalar(bits) => words.push(bits),
            }
        }
        words.extend(memref_1d(self.addr(&self.panic), PANIC_BUFFER_WORDS as u64));
        words.extend(gpu_hidden_words([0; 3], 0, workgroups.map(u64::from)));
        words
    }

    /// Launches the kernel with `words`.
    fn launch(&self, words: &[u64], cfg: LaunchConfig) -> Result<()> {
        let mut b = self.stream.launch_builder(&self.func);
        for w in words {
            b.arg(w);
        }
        // SAFETY: the words are the kernel's ABI over buffers that outlive the launch.
        unsafe { b.launch(cfg) }?;
        Ok(())
    }

    /// An error if a launch so far reported a panic.
    fn check_no_panic(&self) -> Result<()> {
        let mut panic = [0i64; offload_mir::abi::PANIC_BUFFER_WORDS];
        self.stream.memcpy_dtoh(&self.panic, &mut panic[..])?;
        if panic[0] != 0 {
            bail!("the benchmark kernel reported a panic: {panic:?}");
        }
        Ok(())
    }

    /// Median and minimum milliseconds of `reps` runs of `op` after 3 warm-ups, each
    /// timed by CUDA events on the kernel's stream.
    fn time_events(&self, reps: usize, op: &dyn Fn() -> Result<()>) -> Result<(f64, f64)> {
        for _ in 0..3 {
            op()?;
        }
        let mut times = Vec::with_capacity(reps);
        for _ in 0..reps {
            let flags = Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT);
            let (start, end) = (self.ctx.new_event(flags)?, self.ctx.new_event(flags)?);
            start.record(&self.stream)?;
            op()?;
            end.record(&self.stream)?;
            end.synchronize()?;
            times.push(start.elapsed_ms(&end)? as f64);
        }
        times.sort_by(f64::total_cmp);
        Ok((times[times.len() / 2], times[0]))
    }

    /// [`time_events`](Self::time_events) of `before` (e.g. zeroing an output) and a
    /// launch; then an error if any launch panicked.
    fn time(
        &self,
        words: &[u64],
        cfg: LaunchConfig,
        reps: usize,
        before: &dyn Fn() -> Result<()>,
    ) -> Result<(f64, f64)> {
        let times = self.time_events(reps, &|| {
            before()?;
            self.launch(words, cfg)
        })?;
        self.check_no_panic()?;
        Ok(times)
    }
}

/// A one-dimensional launch of `workgroups` workgroups of [`BLOCK`] threads.
fn linear(workgroups: u32) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (workgroups, 1, 1),
        block_dim: (BLOCK, 1, 1),
        shared_mem_bytes: 0,
    }
}

/// Prints a timing as the baselines do: median, bandwidth over `bytes`, minimum.
fn print_bandwidth(label: &str, n: usize, (median, min): (f64, f64), reps: usize, bytes: f64) {
    println!(
        "{label:<28} n={n} median {median:.4} ms  {:.1} GB/s  (min {min:.4} ms, {reps} reps)",
        bytes / median / 1e6
    );
}

/// `offload-bench reduce [N] [REPS]`.
fn reduce(n: usize, reps: usize) -> Result<()> {
    let x: Vec<f32> = (0..n)
        .map(|i| ((i * 7919) % 10007) as f32 * 0.001 - 5.0)
        .collect();
    let grid = (n as u32).div_ceil(BLOCK).min(132 * 16);
    let stride = grid as usize * BLOCK as usize;
    let options = offload::LaunchOptions {
        workgroup_dim: Some([grid, 1, 1]),
        thread_dim: Some([BLOCK, 1, 1]),
        ..offload::LaunchOptions::DEFAULT
    };
    let mut total = vec![0.0f32];
    reduce_sum(options, &mut total, &x, stride)?;
    let want: f64 = x.iter().map(|v| *v as f64).sum();
    let scale: f64 = x.iter().map(|v| v.abs() as f64).sum();
    let ok = (total[0] as f64 - want).abs() <= 1e-4 * scale;
    println!(
        "check: offload! reduce n={n} grid={grid}: {} (got {}, host {want:.3})",
        if ok { "ok" } else { "MISMATCH" },
        total[0]
    );
    if !ok {
        bail!("the reduction differs from the host sum");
    }
    let k = RawKernel::load(&__OFFLOAD_KERNEL_reduce_sum, [BLOCK, 1, 1], false)?;
    let dx = k.stream.clone_htod(&x)?;
    let out = std::cell::RefCell::new(k.stream.alloc_zeros::<f32>(1)?);
    let words = k.words(
        &[
            Word::Memref(k.addr(&*out.borrow()), 1),
            Word::Memref(k.addr(&dx), n),
            Word::Scalar(stride as u64),
        ],
        [grid, 1, 1],
    );
    let timing = k.time(&words, linear(grid), reps, &|| {
        k.stream.memset_zeros(&mut *out.borrow_mut())?;
        Ok(())
    })?;
    print_bandwidth("offload reduce kernel", n, timing, reps, 4.0 * n as f64);
    Ok(())
}

/// `offload-bench fir [N] [REPS]`: `fir16` (taps from a slice) and `fir16_const` (taps a
/// constant array) against the host, then each kernel's time on device data.
fn fir_bench(n: usize, reps: usize) -> Result<()> {
    let x: Vec<f32> = (0..n + 15)
        .map(|i| ((i * 7919) % 10007) as f32 * 0.001 - 5.0)
        .collect();
    let want: Vec<f32> = (0..n)
        .map(|i| (0..16).fold(0.0f32, |acc, k| FIR_TAPS[k].mul_add(x[i + k], acc)))
        .collect();
    for (label, constant) in [("fir16", false), ("fir16_const", true)] {
        let mut y = vec![0.0f32; n];
        if constant {
            fir16_const(offload::LaunchOptions::DEFAULT, &mut y, &x)?;
        } else {
            fir16(offload::LaunchOptions::DEFAULT, &mut y, &x, &FIR_TAPS)?;
        }
        let wrong = (0..n).filter(|&i| y[i] != want[i]).count();
        println!("check: offload! {label} n={n}: {wrong} mismatches");
        if wrong != 0 {
            bail!("{label} differs from the host reference");
        }
    }
    if first_gpu_chip().is_none() {
        println!("no CUDA device: kernel timing skipped");
        return Ok(());
    }
    let workgroups = (n as u32).div_ceil(BLOCK);
    for (label, descriptor, constant) in [
        ("offload fir kernel", &__OFFLOAD_KERNEL_fir16, false),
        (
            "offload fir (const taps)",
            &__OFFLOAD_KERNEL_fir16_const,
            true,
        ),
    ] {
        let k = RawKernel::load(descriptor, [BLOCK, 1, 1], false)?;
        let dx = k.stream.clone_htod(&x)?;
        let dt = k.stream.clone_htod(&FIR_TAPS)?;
        let dy: CudaSlice<f32> = k.stream.alloc_zeros(n)?;
        let mut params = vec![
            Word::Memref(k.addr(&dy), n),
            Word::Memref(k.addr(&dx), n + 15),
        ];
        if !constant {
            params.push(Word::Memref(k.addr(&dt), 16));
        }
        let words = k.words(&params, [workgroups, 1, 1]);
        let timing = k.time(&words, linear(workgroups), reps, &|| Ok(()))?;
        print_bandwidth(label, n, timing, reps, 8.0 * n as f64);
    }
    Ok(())
}

/// `offload-bench matmul [N] [REPS]`.
fn matmul_bench(n: usize, reps: usize) -> Result<()> {
    let a: Vec<f32> = (0..n * n)
        .map(|i| ((i * 7919) % 101) as f32 * 0.01 - 0.5)
        .collect();
    let b: Vec<f32> = (0..n * n)
        .map(|i| ((i * 104729) % 103) as f32 * 0.01 - 0.5)
        .collect();
    let mut c = vec![0.0f32; n * n];
    let options = offload::LaunchOptions {
        thread_dim: Some([16, 16, 1]),
        resident_workgroups: Some(8),
        ..offload::LaunchOptions::DEFAULT
    };
    matmul(options, Region::new_2d(&mut c, n), &a, &b, n)?;
    let mut wrong = 0;
    for s in 0..64u64 {
        let (row, col) = (
            (s.wrapping_mul(2654435761) % n as u64) as usize,
            (s.wrapping_mul(40503) % n as u64) as usize,
        );
        let (mut want, mut scale) = (0.0f64, 0.0f64);
        for k in 0..n {
            let p = a[row * n + k] as f64 * b[k * n + col] as f64;
            want += p;
            scale += p.abs();
        }
        if (c[row * n + col] as f64 - want).abs() > 1e-3 * scale {
            wrong += 1;
        }
    }
    println!("check: offload! matmul n={n}: {wrong} of 64 sampled elements mismatch");
    if wrong != 0 {
        bail!("the matrix product differs from the host reference");
    }
    // As compiled for the launch's workgroups alone, and asked to leave room for eight
    // workgroups per multiprocessor (`resident_workgroups = 8`: full occupancy at 256
    // threads, as nvcc's 32 registers give the CUDA kernel without asking).
    // Then written as `acc += a * b`, fused by default and with `fma = false`.
    for (label, kernel, resident) in [
        ("offload matmul kernel", &__OFFLOAD_KERNEL_matmul, None),
        (
            "offload matmul (resident 8)",
            &__OFFLOAD_KERNEL_matmul,
            Some(8),
        ),
        (
            "offload matmul, a * b + c",
            &__OFFLOAD_KERNEL_matmul_plain,
            None,
        ),
        (
            "  the same, fma = false",
            &__OFFLOAD_KERNEL_matmul_rounded,
            None,
        ),
    ] {
        let k = RawKernel::load_resident(kernel, [16, 16, 1], resident, false)?;
        let (da, db) = (k.stream.clone_htod(&a)?, k.stream.clone_htod(&b)?);
        let dc: CudaSlice<f32> = k.stream.alloc_zeros(n * n)?;
        let tiles = (n as u32).div_ceil(16);
        let words = k.words(
            &[
                Word::Memref2d(k.addr(&dc), n, n),
                Word::Memref(k.addr(&da), n * n),
                Word::Memref(k.addr(&db), n * n),
                Word::Scalar(n as u64),
            ],
            [tiles, tiles, 1],
        );
        let cfg = LaunchConfig {
            grid_dim: (tiles, tiles, 1),
            block_dim: (16, 16, 1),
            shared_mem_bytes: 0,
        };
        let (median, min) = k.time(&words, cfg, reps, &|| Ok(()))?;
        println!(
            "{label:<28} n={n} median {median:.4} ms  {:.1} GFLOP/s  (min {min:.4} ms, {reps} reps)",
            2.0 * (n as f64).powi(3) / median / 1e6
        );
    }
    Ok(())
}

#[path = "../../../tests/conformance/cases.rs"]
mod cases;

/// `offload-bench conformance`: the conformance suite on the default device, ending with
/// the plain `N passed, M failed` line.
fn conformance() -> Result<()> {
    let options = offload::LaunchOptions::DEFAULT;
    let (mut passed, mut failed) = (0, 0);
    macro_rules! run_case {
        ($name:ident) => {
            match cases::$name(options) {
                Ok(()) => {
                    passed += 1;
                    println!("conformance {} ... ok", stringify!($name));
                }
                Err(e) => {
                    failed += 1;
                    println!("conformance {} ... FAILED: {e}", stringify!($name));
                }
            }
        };
    }
    println!("device: {}", offload::default_device()?);
    for_each_case!(run_case);
    println!("{passed} passed, {failed} failed");
    println!("launches: {}", offload::__private::launches());
    if failed > 0 {
        bail!("{failed} conformance cases failed");
    }
    Ok(())
}

/// The middle of some timings.
fn median(mut t: Vec<f64>) -> f64 {
    t.sort_by(f64::total_cmp);
    t[t.len() / 2]
}

/// `offload-bench check`: saxpy at awkward sizes and a device panic, on the default device.
fn check() -> Result<()> {
    for n in [1usize, 255, 256, 257, 1_000_003] {
        let x: Vec<f32> = (0..n).map(|i| i as f32 * 0.5).collect();
        let y0: Vec<f32> = (0..n).map(|i| (i % 13) as f32).collect();
        let mut y = y0.clone();
        try_offload! { kernel = saxpy, args = (&mut y, &x, -2.0f32) }?;
        let wrong = (0..n).filter(|&i| y[i] != -2.0 * x[i] + y0[i]).count();
        println!("check: saxpy n={n}: {wrong} mismatches");
        if wrong != 0 {
            bail!("saxpy n={n} differs from the host reference");
        }
    }
    let x: Vec<i32> = (0..5000).collect();
    let mut y = vec![-7i32; 5000];
    match try_offload! { kernel = shifted_copy, args = (&mut y, &x) } {
        Err(e @ Error::KernelPanic { .. }) => println!("check: device panic reported: {e}"),
        other => bail!("expected a kernel panic, got {other:?}"),
    }
    if y.iter().any(|&v| v != -7) {
        bail!("a panicking launch changed the caller's data");
    }
    println!("check: caller's data unchanged after the panic");
    Ok(())
}

/// `offload-bench first-launch`: how long a program's first launch of a kernel takes
/// (compiling it, or reading it from the disk cache, then loading and running it), next
/// to its second launch in the same process. Run it twice to see the disk cache answer,
/// and with `OFFLOAD_CACHE=off` for a cold compile every time.
fn first_launch() -> Result<()> {
    let n = 1024;
    let x = vec![1.0f32; n];
    let mut y = vec![2.0f32; n];
    let device = offload::default_device()?;
    let t = Instant::now();
    try_offload! { kernel = saxpy, args = (&mut y, &x, 3.0f32) }?;
    let first = t.elapsed();
    let t = Instant::now();
    try_offload! { kernel = saxpy, args = (&mut y, &x, 3.0f32) }?;
    let second = t.elapsed();
    let cache = match offload::DiskCache::from_env() {
        Some(c) => c.dir().display().to_string(),
        None => "off".into(),
    };
    println!(
        "first launch of saxpy (n={n}) on {device}: {:.2} ms; second: {:.3} ms (disk cache: {cache})",
        first.as_secs_f64() * 1e3,
        second.as_secs_f64() * 1e3
    );
    Ok(())
}

fn main() -> Result<()> {
    let mut args = std::env::args().skip(1);
    let which = args.next().unwrap_or_else(|| "saxpy".into());
    match which.as_str() {
        "saxpy" => {}
        "check" => return check(),
        "first-launch" => return first_launch(),
        "conformance" => return conformance(),
        "examples" => return examples::run(),
        "fuzz" => return fuzz::run(args),
        "suite" => return suite::run(args),
        "suite-check" => return suite::check(),
        "tensor-gemm" => return tensor::run(args),
        "compile-time" => {
            return compile_time::run(&args.collect::<Vec<_>>());
        }
        "reduce" | "matmul" | "fir" => {
            let default = match which.as_str() {
                "reduce" => 1 << 28,
                "fir" => 1 << 26,
                _ => 4096,
            };
            let n = args
                .next()
                .map(|s| s.parse())
                .transpose()?
                .unwrap_or(default);
            let reps = args.next().map(|s| s.parse()).transpose()?.unwrap_or(50);
            return match which.as_str() {
                "reduce" => reduce(n, reps),
                "fir" => fir_bench(n, reps),
                _ => matmul_bench(n, reps),
            };
        }
        "launch" => return launch::run(args),
        "streams" => return streams::run(args),
        "nccl" => return nccl::run(args),
        "cpu" => {
            return cpu::run(
                args.next()
                    .map(|s| s.parse())
                    .transpose()?
                    .unwrap_or(1 << 24),
            );
        }
        _ => bail!(
            "unknown benchmark `{which}`; available: saxpy, reduce, matmul, fir, suite, \
             suite-check, tensor-gemm, launch, streams, nccl, check, conformance, examples, cpu, \
             compile-time, first-launch, fuzz"
        ),
    }
    let n: usize = args
        .next()
        .map(|s| s.parse())
        .transpose()?
        .unwrap_or(1 << 28);
    let reps: usize = args.next().map(|s| s.parse()).transpose()?.unwrap_or(50);
    saxpy_suite(n, reps)
}

/// `offload-bench saxpy N REPS`: saxpy through `offload!` against the host, split over
/// every GPU, on device buffers; then the kernel's time against a device-to-device copy.
fn saxpy_suite(n: usize, reps: usize) -> Result<()> {
    println!(
        "devices: {}",
        offload::devices()
            .iter()
            .map(|d| d.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    );
    let x: Vec<f32> = (0..n)
        .map(|i| ((i * 7919) % 10007) as f32 * 0.25 - 1000.0)
        .collect();
    let y0: Vec<f32> = (0..n).map(|i| ((i * 104729) % 9973) as f32 * 0.5).collect();
    let a = 1.5f32;
    let cached = saxpy_end_to_end(&x, &y0, a)?;
    saxpy_split(&x, &y0, a, cached)?;
    saxpy_split_on_device_data(&x, &y0, a)?;
    if first_gpu_chip().is_none() {
        println!("no CUDA device: kernel timing skipped");
        return Ok(());
    }
    let k = RawKernel::load(&__OFFLOAD_KERNEL_saxpy, [BLOCK, 1, 1], true)?;
    let dx = k.stream.clone_htod(&x)?;
    let dy = k.stream.clone_htod(&y0)?;
    let workgroups = (n as u32).div_ceil(BLOCK);
    let words = saxpy_words(&k, k.addr(&dy), k.addr(&dx), n, a, workgroups);
    let kernel = k.time(&words, linear(workgroups), reps, &|| Ok(()))?;
    print_bandwidth("offload saxpy kernel", n, kernel, reps, 12.0 * n as f64);
    // Copying 6n bytes reads 6n and writes 6n: the 12n bytes saxpy moves (read x, read
    // y, write y), so the two GB/s figures compare directly.
    let dst = std::cell::RefCell::new(k.stream.alloc_zeros::<u8>(6 * n)?);
    let src: CudaSlice<u8> = k.stream.alloc_zeros(6 * n)?;
    let copy = k.time_events(reps, &|| {
        k.stream.memcpy_dtod(&src, &mut *dst.borrow_mut())?;
        Ok(())
    })?;
    print_bandwidth("device-to-device copy", n, copy, reps, 12.0 * n as f64);
    println!(
        "ratio: offload saxpy kernel / d2d copy of the same bytes = {:.3}",
        kernel.0 / copy.0
    );
    Ok(())
}

/// The words of saxpy `y = a * x + y` over `n` elements at `y` and `x`.
fn saxpy_words(k: &RawKernel, y: u64, x: u64, n: usize, a: f32, workgroups: u32) -> Vec<u64> {
    k.words(
        &[
            Word::Memref(y, n),
            Word::Memref(x, n),
            Word::Scalar(a.to_bits() as u64),
        ],
        [workgroups, 1, 1],
    )
}

/// The chip of the first device, if it is a CUDA GPU (`sm_90`).
fn first_gpu_chip() -> Option<String> {
    match offload::devices().first() {
        Some(offload::Device::Cuda {
            compute_capability: (major, minor),
            ..
        }) => Some(format!("sm_{major}{minor}")),
        _ => None,
    }
}

/// Correctness through the public API against a host loop, and the first and cached
/// end-to-end launch times; returns the cached one.
fn saxpy_end_to_end(x: &[f32], y0: &[f32], a: f32) -> Result<std::time::Duration> {
    let n = x.len();
    let mut y = y0.to_vec();
    let t = Instant::now();
    try_offload! { kernel = saxpy, args = (&mut y, x, a) }?;
    let first = t.elapsed();
    let mut y2 = y0.to_vec();
    let t = Instant::now();
    try_offload! { kernel = saxpy, args = (&mut y2, x, a) }?;
    let second = t.elapsed();
    let wrong = (0..n).filter(|&i| y[i] != a * x[i] + y0[i]).count();
    println!(
        "check: offload! saxpy n={n}: {} ({wrong} mismatches); end-to-end launch incl. copies: first {:.1} ms, cached {:.1} ms",
        if wrong == 0 {
            "matches host reference"
        } else {
            "MISMATCH"
        },
        first.as_secs_f64() * 1e3,
        second.as_secs_f64() * 1e3
    );
    if wrong != 0 {
        bail!("saxpy result differs from the host reference");
    }
    Ok(second)
}

/// The same launch split across every GPU (`device = all`), end to end.
fn saxpy_split(x: &[f32], y0: &[f32], a: f32, single: std::time::Duration) -> Result<()> {
    let n = x.len();
    let mut y3 = y0.to_vec();
    try_offload! { kernel = saxpy, args = (&mut y3, x, a), device = all }?;
    let t = Instant::now();
    try_offload! { kernel = saxpy, args = (&mut y3, x, a), device = all }?;
    let split = t.elapsed();
    let wrong = (0..n)
        .filter(|&i| y3[i] != a * x[i] + (a * x[i] + y0[i]))
        .count();
    if wrong != 0 {
        bail!("split saxpy differs from the host reference in {wrong} elements");
    }
    let gpus = offload::devices()
        .iter()
        .filter(|d| matches!(d, offload::Device::Cuda { .. }))
        .count();
    println!(
        "split: offload! saxpy n={n} with device = all over {gpus} GPU(s): {:.1} ms end to end (single device, cached: {:.1} ms)",
        split.as_secs_f64() * 1e3,
        single.as_secs_f64() * 1e3
    );
    Ok(())
}

/// Device-resident data: `device = all` over split buffers against one GPU's buffers,
/// ten launches each, synchronised at the end.
fn saxpy_split_on_device_data(x: &[f32], y0: &[f32], a: f32) -> Result<()> {
    let n = x.len();
    let launches = 10;
    let sx = offload::SplitBuffer::replicate(x)?;
    let mut sy = offload::SplitBuffer::scatter(y0, BLOCK as usize)?;
    try_offload! { kernel = saxpy, args = (&mut sy, &sx, a), device = all }?;
    offload::synchronize()?;
    let t = Instant::now();
    for _ in 0..launches {
        try_offload! { kernel = saxpy, args = (&mut sy, &sx, a), device = all }?;
    }
    offload::synchronize()?;
    let split_ms = t.elapsed().as_secs_f64() * 1e3 / launches as f64;
    let mut want = y0.to_vec();
    for _ in 0..=launches {
        want.iter_mut().zip(x).for_each(|(y, x)| *y += a * x);
    }
    let wrong = sy
        .to_vec()?
        .iter()
        .zip(&want)
        .filter(|(g, w)| g != w)
        .count();
    if wrong != 0 {
        bail!("split saxpy on device data differs from the host in {wrong} elements");
    }
    let device = offload::default_device()?;
    let dx = offload::DeviceBuffer::from_slice(&device, x)?;
    let mut dy = offload::DeviceBuffer::from_slice(&device, y0)?;
    try_offload! { kernel = saxpy, args = (&mut dy, &dx, a) }?;
    offload::synchronize()?;
    let t = Instant::now();
    for _ in 0..launches {
        try_offload! { kernel = saxpy, args = (&mut dy, &dx, a) }?;
    }
    offload::synchronize()?;
    let one_ms = t.elapsed().as_secs_f64() * 1e3 / launches as f64;
    println!(
        "split on device data: offload! saxpy n={n} with device = all over {} part(s): {split_ms:.3} ms per launch; on one device's buffers: {one_ms:.3} ms ({:.2}x)",
        sy.devices().len(),
        one_ms / split_ms
    );
    Ok(())
}
