//! `offload-bench launch [PATH/TO/launch_cuda] [REPS]`: what small launches and host
//! data cost, ours next to raw `cuLaunchKernel` and to `cuda/launch.cu` (a CUDA C++
//! program doing the same with `<<<>>>` and pageable `cudaMemcpy`), whose figures it
//! reads from the program's output. Fails if a steady-state launch on device buffers
//! allocates on the host.
//!
//! - launch: back-to-back launches of saxpy over 1024 floats in device buffers, then one
//!   synchronise: time per launch, and heap allocations per launch;
//! - round trip: one float copied into a device buffer, the sum of 2^20 floats in a
//!   device buffer added into it, the float read back (`copy_from_slice`, launch,
//!   `to_vec`);
//! - host data: saxpy over host vectors of 2^20 and 2^26 floats, and the sum of 2^20
//!   host floats into a host total (the seed's `offload!` over `&mut`/`&` data).

use crate::{BLOCK, RawKernel, linear, saxpy_words};
use anyhow::{Context, Result, bail};
use offload::DeviceBuffer;
use std::alloc::{GlobalAlloc, Layout, System};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// The system allocator, counting allocations: how the launch's host side is checked
/// to allocate nothing.
struct Counting;

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

// SAFETY: every call is the system allocator's; counting is an atomic add.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static COUNTING: Counting = Counting;

/// The median of `reps` timed runs of `f` after 3 warm-up ones, in microseconds.
pub(crate) fn median_us(reps: usize, mut f: impl FnMut() -> Result<()>) -> Result<f64> {
    for _ in 0..3 {
        f()?;
    }
    let mut times = Vec::with_capacity(reps);
    for _ in 0..reps {
        let t = Instant::now();
        f()?;
        times.push(t.elapsed().as_secs_f64() * 1e6);
    }
    times.sort_by(f64::total_cmp);
    Ok(times[reps / 2])
}

pub fn run(mut args: impl Iterator<Item = String>) -> Result<()> {
    let cuda = args.next();
    let reps: usize = args.next().map(|s| s.parse()).transpose()?.unwrap_or(200);
    if crate::first_gpu_chip().is_none() {
        bail!("no CUDA device");
    }
    let mut ours = BTreeMap::new();
    let (launch, raw, allocations) = launches()?;
    ours.insert("launch_us", launch);
    ours.insert("raw_launch_us", raw);
    ours.insert("round_trip_us", round_trip(reps)?);
    let (saxpy_1m, saxpy_64m, reduce_1m) = host_data(reps)?;
    ours.insert("host_saxpy_1m_us", saxpy_1m);
    ours.insert("host_saxpy_64m_us", saxpy_64m);
    ours.insert("host_reduce_1m_us", reduce_1m);
    let theirs = match cuda {
        Some(path) => cuda_figures(&path, reps)?,
        None => BTreeMap::new(),
    };
    println!(
        "{:<22} {:>12} {:>12} {:>8}",
        "figure (us)", "offload", "CUDA C++", "ratio"
    );
    for (name, value) in &ours {
        match theirs.get(*name) {
            Some(c) => println!("{name:<22} {value:>12.2} {c:>12.2} {:>8.3}", value / c),
            None => println!("{name:<22} {value:>12.2} {:>12} {:>8}", "-", "-"),
        }
    }
    println!(
        "launch: offload! against raw cuLaunchKernel {:.3}; host allocations per launch: {allocations}",
        launch / raw
    );
    if allocations != 0.0 {
        bail!("a steady-state launch allocated on the host ({allocations} per launch)");
    }
    Ok(())
}

/// Back-to-back launches on device buffers: ours and raw `cuLaunchKernel` per launch, and
/// our heap allocations per launch.
fn launches() -> Result<(f64, f64, f64)> {
    let k = RawKernel::load(&crate::__OFFLOAD_KERNEL_saxpy, [BLOCK, 1, 1], false)?;
    let small = 1024usize;
    let launches = 5000;
    let device = offload::default_device()?;
    let sx = DeviceBuffer::from_slice(&device, &vec![1.0f32; small])?;
    let mut sy = DeviceBuffer::from_slice(&device, &vec![0.0f32; small])?;
    let options = offload::LaunchOptions::DEFAULT;
    // A first batch as long as the timed one: the lists of pending launches grow to
    // their length once and keep it across synchronisations.
    for _ in 0..launches {
        crate::saxpy(options, &mut sy, &sx, 1.0)?;
    }
    offload::synchronize()?;
    let before = ALLOCATIONS.load(Ordering::Relaxed);
    let t = Instant::now();
    for _ in 0..launches {
        crate::saxpy(options, &mut sy, &sx, 1.0)?;
    }
    let allocated = ALLOCATIONS.load(Ordering::Relaxed) - before;
    offload::synchronize()?;
    let ours = t.elapsed().as_secs_f64() * 1e6 / launches as f64;
    let rx = k.stream.clone_htod(&vec![1.0f32; small])?;
    let ry = k.stream.clone_htod(&vec![0.0f32; small])?;
    let workgroups = (small as u32).div_ceil(BLOCK);
    let words = saxpy_words(&k, k.addr(&ry), k.addr(&rx), small, 1.0, workgroups);
    k.stream.synchronize()?;
    let t = Instant::now();
    for _ in 0..launches {
        k.launch(&words, linear(workgroups))?;
    }
    k.stream.synchronize()?;
    let raw = t.elapsed().as_secs_f64() * 1e6 / launches as f64;
    let values = sy.to_vec()?;
    if values.iter().any(|&v| v != (2 * launches) as f32) {
        bail!("the small launches did not all run: {}", values[0]);
    }
    Ok((ours, raw, allocated as f64 / launches as f64))
}

/// 2^20 floats, the sum's launch geometry (as `cuda/launch.cu` and `cuda/reduce.cu`),
/// and the host sum.
fn reduction_input() -> (Vec<f32>, offload::LaunchOptions, usize, f32) {
    let m = 1usize << 20;
    let x: Vec<f32> = (0..m).map(|i| (i % 1000) as f32 * 0.001).collect();
    let grid = (m as u32).div_ceil(BLOCK).min(132 * 16);
    let options = offload::LaunchOptions {
        workgroup_dim: Some([grid, 1, 1]),
        thread_dim: Some([BLOCK, 1, 1]),
        ..offload::LaunchOptions::DEFAULT
    };
    let want = x.iter().map(|&v| v as f64).sum::<f64>() as f32;
    (x, options, grid as usize * BLOCK as usize, want)
}

fn close(got: f32, want: f32) -> bool {
    (got - want).abs() <= 1e-4 * want.abs()
}

/// `copy_from_slice` of one float, the sum launched into it, `to_vec`.
fn round_trip(reps: usize) -> Result<f64> {
    let (x, options, stride, want) = reduction_input();
    let device = offload::default_device()?;
    let dx = DeviceBuffer::from_slice(&device, &x)?;
    let mut total = DeviceBuffer::<f32>::zeros(&device, 1)?;
    let mut last = 0.0;
    let t = median_us(reps, || {
        total.copy_from_slice(&[0.0])?;
        crate::reduce_sum(options, &mut total, &dx, stride)?;
        last = total.to_vec()?[0];
        Ok(())
    })?;
    if !close(last, want) {
        bail!("the round trip's sum is {last}, the host's {want}");
    }
    Ok(t)
}

/// Host-data launches: saxpy at 2^20 and 2^26, the sum at 2^20.
fn host_data(reps: usize) -> Result<(f64, f64, f64)> {
    let saxpy = |n: usize, reps: usize| -> Result<f64> {
        let x = vec![1.0f32; n];
        let mut y = vec![2.0f32; n];
        let t = median_us(reps, || {
            Ok(crate::saxpy(Default::default(), &mut y, &x, 1.5)?)
        })?;
        // 2 + 1.5 per launch: 3 warm-ups and `reps` timed.
        let want = 2.0 + 1.5 * (reps + 3) as f32;
        if y[0] != want || y[n - 1] != want {
            bail!("host saxpy n={n}: {} and {}, not {want}", y[0], y[n - 1]);
        }
        Ok(t)
    };
    let s1 = saxpy(1 << 20, reps)?;
    let s64 = saxpy(64 << 20, (reps / 10).max(5))?;
    let (x, options, stride, want) = reduction_input();
    let mut total = [0.0f32];
    let r = median_us(reps, || {
        total[0] = 0.0;
        crate::reduce_sum(options, &mut total[..], &x, stride)?;
        Ok(())
    })?;
    if !close(total[0], want) {
        bail!("the host sum is {}, the host's {want}", total[0]);
    }
    Ok((s1, s64, r))
}

/// The figures `cuda/launch.cu` prints.
pub(crate) fn cuda_figures(path: &str, reps: usize) -> Result<BTreeMap<String, f64>> {
    let out = std::process::Command::new(path)
        .arg(reps.to_string())
        .output()
        .with_context(|| format!("running {path}"))?;
    if !out.status.success() {
        bail!("{path} failed: {}", String::from_utf8_lossy(&out.stderr));
    }
    let text = String::from_utf8(out.stdout)?;
    text.lines()
        .map(|line| {
            let (name, value) = line
                .split_once(' ')
                .with_context(|| format!("{path} printed `{line}`"))?;
            Ok((name.to_string(), value.trim().parse()?))
        })
        .collect()
}
