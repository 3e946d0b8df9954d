//! Benchmarks for the H200 (or any CUDA machine; see `tools/bench/run-gpu.sh`).
//!
//! `offload-bench saxpy [N] [REPS]` checks `offload!` saxpy against a host reference at
//! size N, then times the kernel our compiler generated (the same PTX the runtime loads)
//! with CUDA events on device-resident data, next to a device-to-device copy of the same
//! bytes. The CUDA C++ baseline (`cuda/saxpy.cu`) prints the same table rows, so one run
//! of the script puts them side by side.

use anyhow::{Result, bail};
use cudarc::driver::{CudaContext, CudaSlice, LaunchConfig, PushKernelArg};
use offload::prelude::*;

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

const BLOCK: u32 = 256;

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
    if failed > 0 {
        bail!("{failed} conformance cases failed");
    }
    Ok(())
}

/// `offload-bench cpu [N]`: saxpy on the CPU backend next to the same loop with rayon,
/// median of 20 runs each, and a launch on 256 elements for the fixed cost of a launch.
fn cpu(n: usize) -> Result<()> {
    use rayon::prelude::*;
    let cpu = offload::devices().len() - 1;
    let x: Vec<f32> = (0..n).map(|i| (i % 1000) as f32).collect();
    let mut y = vec![1.0f32; n];
    let median = |mut t: Vec<f64>| {
        t.sort_by(f64::total_cmp);
        t[t.len() / 2]
    };
    try_offload! { kernel = saxpy, args = (&mut y, &x, 0.5f32), device = cpu }?;
    let mut offload_ms = Vec::new();
    for _ in 0..20 {
        let t = std::time::Instant::now();
        try_offload! { kernel = saxpy, args = (&mut y, &x, 0.5f32), device = cpu }?;
        offload_ms.push(t.elapsed().as_secs_f64() * 1e3);
    }
    // The same launch on CPU device buffers, which kernels update in place: no scratch
    // copies for the all-or-nothing rule.
    let dx = offload::DeviceBuffer::from_slice(&offload::Device::Cpu, &x)?;
    let mut dy = offload::DeviceBuffer::from_slice(&offload::Device::Cpu, &y)?;
    let mut in_place_ms = Vec::new();
    for _ in 0..20 {
        let t = std::time::Instant::now();
        try_offload! { kernel = saxpy, args = (&mut dy, &dx, 0.5f32), device = cpu }?;
        in_place_ms.push(t.elapsed().as_secs_f64() * 1e3);
    }
    let mut rayon_ms = Vec::new();
    for _ in 0..20 {
        let t = std::time::Instant::now();
        y.par_iter_mut()
            .zip(&x)
            .for_each(|(y, x)| *y = 0.5 * x + *y);
        rayon_ms.push(t.elapsed().as_secs_f64() * 1e3);
    }
    let (small_x, mut small_y) = (vec![1.0f32; 256], vec![1.0f32; 256]);
    let mut small_ms = Vec::new();
    for _ in 0..200 {
        let t = std::time::Instant::now();
        try_offload! { kernel = saxpy, args = (&mut small_y, &small_x, 0.5f32), device = cpu }?;
        small_ms.push(t.elapsed().as_secs_f64() * 1e3);
    }
    let (o, d, r) = (median(offload_ms), median(in_place_ms), median(rayon_ms));
    println!(
        "cpu saxpy n={n} on {} threads: rayon {r:.3} ms; offload on host data {o:.3} ms ({:.2}x), \
         on device buffers {d:.3} ms ({:.2}x); a launch on 256 elements: {:.3} ms",
        rayon::current_num_threads(),
        o / r,
        d / r,
        median(small_ms)
    );
    Ok(())
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

fn main() -> Result<()> {
    let mut args = std::env::args().skip(1);
    let which = args.next().unwrap_or_else(|| "saxpy".into());
    match which.as_str() {
        "saxpy" => {}
        "check" => return check(),
        "conformance" => return conformance(),
        "cpu" => {
            return cpu(args
                .next()
                .map(|s| s.parse())
                .transpose()?
                .unwrap_or(1 << 24));
        }
        _ => bail!("unknown benchmark `{which}`; available: saxpy, check, conformance, cpu"),
    }
    let n: usize = args
        .next()
        .map(|s| s.parse())
        .transpose()?
        .unwrap_or(1 << 28);
    let reps: usize = args.next().map(|s| s.parse()).transpose()?.unwrap_or(50);
    println!(
        "devices: {}",
        offload::devices()
            .iter()
            .map(|d| d.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    );

    // 1. Correctness through the public API, against a host loop.
    let x: Vec<f32> = (0..n)
        .map(|i| ((i * 7919) % 10007) as f32 * 0.25 - 1000.0)
        .collect();
    let y0: Vec<f32> = (0..n).map(|i| ((i * 104729) % 9973) as f32 * 0.5).collect();
    let a = 1.5f32;
    let mut y = y0.clone();
    let t = std::time::Instant::now();
    try_offload! { kernel = saxpy, args = (&mut y, &x, a) }?;
    let first = t.elapsed();
    let mut y2 = y0.clone();
    let t = std::time::Instant::now();
    try_offload! { kernel = saxpy, args = (&mut y2, &x, a) }?;
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
    // The same launch split across every GPU (`device = all`), end to end.
    let mut y3 = y0.clone();
    try_offload! { kernel = saxpy, args = (&mut y3, &x, a), device = all }?;
    let t = std::time::Instant::now();
    try_offload! { kernel = saxpy, args = (&mut y3, &x, a), device = all }?;
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
        second.as_secs_f64() * 1e3
    );

    // 2. Kernel time with device-resident data.
    let chip = match offload::devices().first() {
        Some(offload::Device::Cuda {
            compute_capability: (major, minor),
            ..
        }) => format!("sm_{major}{minor}"),
        _ => {
            println!("no CUDA device: kernel timing skipped");
            return Ok(());
        }
    };
    let body = __OFFLOAD_KERNEL_saxpy.body()?;
    let valid = offload_mir::validate(body)?;
    let t = std::time::Instant::now();
    let target = offload_lowering::GpuTarget {
        chip: chip.clone(),
        ..Default::default()
    };
    let ptx = offload_lowering::compile_ptx(valid, &target)?;
    let compile_ms = t.elapsed().as_secs_f64() * 1e3;
    println!("compile: MIR -> PTX ({chip}) in {compile_ms:.1} ms");

    let ctx = CudaContext::new(0)?;
    let stream = ctx.default_stream();
    let t = std::time::Instant::now();
    let module = ctx.load_module(cudarc::nvrtc::Ptx::from_src(ptx.ptx.as_str()))?;
    let func = module.load_function(&ptx.entry)?;
    println!(
        "load: PTX -> module (driver JIT) in {:.1} ms",
        t.elapsed().as_secs_f64() * 1e3
    );
    let dx = stream.clone_htod(&x)?;
    let dy = stream.clone_htod(&y0)?;
    let panic: CudaSlice<i64> = stream.alloc_zeros(7)?;
    let addr = |s: &CudaSlice<f32>| cudarc::driver::DevicePtr::device_ptr(s, &stream).0;
    let (px, py) = (addr(&dx), addr(&dy));
    let pp = cudarc::driver::DevicePtr::device_ptr(&panic, &stream).0;
    let a_bits = a.to_bits() as u64;
    // The kernel ABI: two memrefs, the scalar, the panic buffer, the workgroup base.
    let words: [u64; 17] = [
        py, py, 0, n as u64, 1, px, px, 0, n as u64, 1, a_bits, pp, pp, 0, 7, 1, 0,
    ];
    let grid = (n as u32).div_ceil(BLOCK);
    let cfg = LaunchConfig {
        grid_dim: (grid, 1, 1),
        block_dim: (BLOCK, 1, 1),
        shared_mem_bytes: 0,
    };
    let run = |label: &str, launch: &dyn Fn() -> Result<()>| -> Result<f64> {
        for _ in 0..3 {
            launch()?;
        }
        let mut times = Vec::with_capacity(reps);
        for _ in 0..reps {
            let start =
                ctx.new_event(Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT))?;
            let end = ctx.new_event(Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT))?;
            start.record(&stream)?;
            launch()?;
            end.record(&stream)?;
            end.synchronize()?;
            times.push(start.elapsed_ms(&end)? as f64);
        }
        times.sort_by(f64::total_cmp);
        let median = times[times.len() / 2];
        let bytes = 12.0 * n as f64;
        println!(
            "{label:<28} n={n} median {median:.4} ms  {:.1} GB/s  (min {:.4} ms, {} reps)",
            bytes / median / 1e6,
            times[0],
            reps
        );
        Ok(median)
    };
    let kernel_ms = run("offload saxpy kernel", &|| {
        let mut b = stream.launch_builder(&func);
        for w in &words {
            b.arg(w);
        }
        unsafe { b.launch(cfg) }?;
        Ok(())
    })?;
    let mut panic_words = [0i64; 7];
    stream.memcpy_dtoh(&panic, &mut panic_words[..])?;
    if panic_words[0] != 0 {
        bail!("the benchmark kernel reported a panic: {panic_words:?}");
    }
    // Copying 6n bytes reads 6n and writes 6n: the same 12n bytes of traffic saxpy has
    // (read x, read y, write y), so the two GB/s figures compare directly.
    let dst: std::cell::RefCell<CudaSlice<u8>> =
        std::cell::RefCell::new(stream.alloc_zeros(6 * n)?);
    let src: CudaSlice<u8> = stream.alloc_zeros(6 * n)?;
    let copy_ms = run("device-to-device copy", &|| {
        stream.memcpy_dtod(&src, &mut *dst.borrow_mut())?;
        Ok(())
    })?;
    println!(
        "ratio: offload saxpy kernel / d2d copy of the same bytes = {:.3}",
        kernel_ms / copy_ms
    );

    // Launch overhead with device-resident data: many small launches through `offload!`
    // (asynchronous on device buffers) against raw launches of the same PTX.
    let small = 1024usize;
    let device = offload::default_device()?;
    let sx = offload::DeviceBuffer::from_slice(&device, &vec![1.0f32; small])?;
    let mut sy = offload::DeviceBuffer::from_slice(&device, &vec![0.0f32; small])?;
    let launches = 5000;
    try_offload! { kernel = saxpy, args = (&mut sy, &sx, 1.0f32) }?;
    offload::synchronize()?;
    let t = std::time::Instant::now();
    for _ in 0..launches {
        try_offload! { kernel = saxpy, args = (&mut sy, &sx, 1.0f32) }?;
    }
    offload::synchronize()?;
    let ours = t.elapsed().as_secs_f64() * 1e6 / launches as f64;
    let rx = stream.clone_htod(&vec![1.0f32; small])?;
    let ry = stream.clone_htod(&vec![0.0f32; small])?;
    let (rxp, ryp) = (addr(&rx), addr(&ry));
    let small_words: [u64; 17] = [
        ryp,
        ryp,
        0,
        small as u64,
        1,
        rxp,
        rxp,
        0,
        small as u64,
        1,
        1f32.to_bits() as u64,
        pp,
        pp,
        0,
        7,
        1,
        0,
    ];
    let small_cfg = LaunchConfig {
        grid_dim: ((small as u32).div_ceil(BLOCK), 1, 1),
        block_dim: (BLOCK, 1, 1),
        shared_mem_bytes: 0,
    };
    stream.synchronize()?;
    let t = std::time::Instant::now();
    for _ in 0..launches {
        let mut b = stream.launch_builder(&func);
        for w in &small_words {
            b.arg(w);
        }
        unsafe { b.launch(small_cfg) }?;
    }
    stream.synchronize()?;
    let raw = t.elapsed().as_secs_f64() * 1e6 / launches as f64;
    let values = sy.to_vec()?;
    if values.iter().any(|&v| v != (launches + 1) as f32) {
        bail!("the small launches did not all run: {}", values[0]);
    }
    println!(
        "launch overhead: offload! on device buffers {ours:.2} us per launch, raw cuLaunchKernel {raw:.2} us, ratio {:.2} ({launches} launches of n={small})",
        ours / raw
    );
    Ok(())
}
