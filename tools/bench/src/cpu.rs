//! `offload-bench cpu [N]`: the CPU backend next to rayon running the same algorithm.

use super::{block_scan, median, saxpy};
use anyhow::{Result, bail};
use offload::prelude::*;

/// `offload-bench cpu [N]`: saxpy on the CPU backend next to the same loop with rayon,
/// median of 20 runs each, and a launch on 256 elements for the fixed cost of a launch.
pub fn run(n: usize) -> Result<()> {
    let cpu = offload::devices().len() - 1;
    let x: Vec<f32> = (0..n).map(|i| (i % 1000) as f32).collect();
    let saxpy = cpu_saxpy(n, cpu, &x)?;
    cpu_block_scan(n, cpu, &x)?;
    println!("{saxpy}");
    Ok(())
}

/// `cpu`'s saxpy: on host data, on device buffers, with rayon, and a small launch; the
/// line that reports them.
fn cpu_saxpy(n: usize, cpu: usize, x: &[f32]) -> Result<String> {
    use rayon::prelude::*;
    let x = x.to_vec();
    let mut y = vec![1.0f32; n];
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
        y.par_iter_mut().zip(&x).for_each(|(y, x)| *y += 0.5 * x);
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
    Ok(format!(
        "cpu saxpy n={n} on {} threads: rayon {r:.3} ms; offload on host data {o:.3} ms ({:.2}x), \
         on device buffers {d:.3} ms ({:.2}x); a launch on 256 elements: {:.3} ms",
        rayon::current_num_threads(),
        o / r,
        d / r,
        median(small_ms)
    ))
}

/// `cpu`'s block scan (a kernel with barriers) next to the same blocked scan with rayon,
/// both as a running sum and with the kernel's own doubling steps.
fn cpu_block_scan(n: usize, cpu: usize, x: &[f32]) -> Result<()> {
    use rayon::prelude::*;
    let x = x.to_vec();
    let mut scanned = vec![0.0f32; n];
    try_offload! { kernel = block_scan, args = (&mut scanned, &x), device = cpu }?;
    let mut want = x.clone();
    want.par_chunks_mut(256).for_each(|block| {
        for k in 1..block.len() {
            block[k] += block[k - 1];
        }
    });
    let wrong = scanned
        .iter()
        .zip(&want)
        .filter(|(a, b)| (*a - *b).abs() > 1e-3 * b.abs())
        .count();
    if wrong != 0 {
        bail!("block_scan differs from the host's in {wrong} elements");
    }
    let mut scan_ms = Vec::new();
    for _ in 0..5 {
        let t = std::time::Instant::now();
        try_offload! { kernel = block_scan, args = (&mut scanned, &x), device = cpu }?;
        scan_ms.push(t.elapsed().as_secs_f64() * 1e3);
    }
    let mut rayon_scan_ms = Vec::new();
    for _ in 0..5 {
        let t = std::time::Instant::now();
        want.copy_from_slice(&x);
        want.par_chunks_mut(256).for_each(|block| {
            for k in 1..block.len() {
                block[k] += block[k - 1];
            }
        });
        rayon_scan_ms.push(t.elapsed().as_secs_f64() * 1e3);
    }
    // A serial loop on one core: what a barrier kernel on a small machine is held to.
    let mut serial_ms = Vec::new();
    for _ in 0..5 {
        let t = std::time::Instant::now();
        want.copy_from_slice(&x);
        for block in want.chunks_mut(256) {
            for k in 1..block.len() {
                block[k] += block[k - 1];
            }
        }
        std::hint::black_box(&want);
        serial_ms.push(t.elapsed().as_secs_f64() * 1e3);
    }
    // The kernel's own algorithm (eight doubling steps per block) with rayon.
    let mut rayon_steps_ms = Vec::new();
    for _ in 0..5 {
        let t = std::time::Instant::now();
        want.copy_from_slice(&x);
        want.par_chunks_mut(256).for_each(|block| {
            let mut before = [0.0f32; 256];
            let mut s = 1;
            while s < block.len() {
                before[..block.len()].copy_from_slice(block);
                for k in s..block.len() {
                    block[k] += before[k - s];
                }
                s *= 2;
            }
        });
        rayon_steps_ms.push(t.elapsed().as_secs_f64() * 1e3);
    }
    let (s, rs, rh, serial) = (
        median(scan_ms),
        median(rayon_scan_ms),
        median(rayon_steps_ms),
        median(serial_ms),
    );
    println!(
        "cpu block scan n={n} (256-thread workgroups, 16 barriers): offload {s:.3} ms; rayon, \
         the same doubling steps {rh:.3} ms ({:.1}x); rayon, a running sum {rs:.3} ms ({:.1}x); \
         a serial running sum {serial:.3} ms ({:.2}x)",
        s / rh,
        s / rs,
        s / serial
    );
    Ok(())
}
