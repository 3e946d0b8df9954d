//! Kernels compiled ahead of time: `build.rs` compiles every kernel here with
//! `offload-build`, and this program, built without the `jit` feature, launches them
//! with no compiler inside it. Each result is checked against the host.
//!
//! `cargo run --release -p offload-example-aot` (`OFFLOAD_DEVICE=cpu` for the CPU).
//!
//! The crate forbids `unsafe` code: building kernels ahead of time puts none in it.
#![forbid(unsafe_code)]

use offload::prelude::*;

#[offload_kernel]
fn saxpy(mut y: Region<f32, Linear1D>, x: &[f32], a: f32) {
    let i = y.index();
    if let Some(v) = y.get_mut() {
        *v = a * x[i] + *v;
    }
}

#[offload_device]
fn smooth<T: Float>(x: T) -> T {
    x * x * (T::from_f64(3.0) - T::from_f64(2.0) * x)
}

/// A generic kernel calling a device function: one instance per float type.
#[offload_kernel]
fn smoothstep<T: Float>(mut y: Region<T, Linear1D>) {
    if let Some(v) = y.get_mut() {
        *v = smooth((*v).clamp(T::from_f64(0.0), T::from_f64(1.0)));
    }
}

/// Values per row of `normalize_rows`: a strategy may name a `const` item.
const ROW: usize = 40;

/// Each thread scales one row of `ROW` values to sum to one.
#[offload_kernel]
fn normalize_rows(mut rows: Region<f32, Chunked<ROW>>) {
    if let Some(row) = rows.get_mut() {
        let mut sum = 0.0f32;
        for k in 0..row.len() {
            sum += row[k];
        }
        for k in 0..row.len() {
            row[k] /= sum;
        }
    }
}

/// Sums of 256 values per workgroup: shared memory and a barrier.
#[offload_kernel]
fn block_sums(sums: Atomic<f64>, x: &[f64]) {
    let mut partial = Shared::<f64, 256>::new();
    let i = workgroup_idx(0) * workgroup_dim(0) + thread_idx(0);
    partial.write(if i < x.len() { x[i] } else { 0.0 });
    sync_threads();
    if thread_idx(0) == 0 {
        let mut s = 0.0;
        let mut k = 0;
        while k < workgroup_dim(0) {
            s += partial[k];
            k += 1;
        }
        sums.fetch_add(workgroup_idx(0), s);
    }
}

/// Whether `got` matches `want` to `tolerance` relative to its magnitude: a GPU may fuse a
/// multiply and an add that the host rounds separately.
fn close<T: Into<f64> + Copy>(got: &[T], want: &[T], tolerance: f64) -> bool {
    got.len() == want.len()
        && got.iter().zip(want).all(|(&g, &w)| {
            let (g, w) = (g.into(), w.into());
            (g - w).abs() <= tolerance * w.abs().max(1.0)
        })
}

fn check(what: &str, ok: bool) -> Result<(), Box<dyn std::error::Error>> {
    if !ok {
        return Err(format!("{what}: the device's result differs from the host's").into());
    }
    println!("ok: {what}");
    Ok(())
}

fn main() -> std::process::ExitCode {
    match run() {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    println!("device: {}", offload::default_device()?);
    println!("jit in this program: {}", offload::HAS_JIT);

    // A first launch here loads code built ahead of time: nothing is compiled. Timed as
    // `offload-bench first-launch` times the JIT's.
    let (x, mut y) = (vec![1.0f32; 1024], vec![2.0f32; 1024]);
    let t = std::time::Instant::now();
    try_offload! { kernel = saxpy, args = (&mut y, &x, 3.0f32) }?;
    let first = t.elapsed();
    let t = std::time::Instant::now();
    try_offload! { kernel = saxpy, args = (&mut y, &x, 3.0f32) }?;
    println!(
        "first launch of saxpy (n=1024): {:.2} ms; second: {:.3} ms (built ahead of time)",
        first.as_secs_f64() * 1e3,
        t.elapsed().as_secs_f64() * 1e3
    );

    let n: usize = 100_003;

    let x: Vec<f32> = (0..n).map(|i| (i % 97) as f32 * 0.5).collect();
    let mut y: Vec<f32> = (0..n).map(|i| (i % 13) as f32).collect();
    let want: Vec<f32> = x.iter().zip(&y).map(|(x, y)| 2.5 * x + y).collect();
    try_offload! { kernel = saxpy, args = (&mut y, &x, 2.5f32) }?;
    check("saxpy", close(&y, &want, 1e-6))?;

    let mut z: Vec<f64> = (0..n).map(|i| (i % 101) as f64 / 80.0 - 0.1).collect();
    let want: Vec<f64> = z
        .iter()
        .map(|v| {
            let c = v.clamp(0.0, 1.0);
            c * c * (3.0 - 2.0 * c)
        })
        .collect();
    try_offload! { kernel = smoothstep, args = (&mut z, ) }?;
    check("smoothstep::<f64>", close(&z, &want, 1e-12))?;

    let mut rows: Vec<f32> = (0..ROW * 500).map(|i| (i % 7 + 1) as f32).collect();
    let mut want = rows.clone();
    for row in want.chunks_mut(ROW) {
        let sum: f32 = row.iter().sum();
        row.iter_mut().for_each(|v| *v /= sum);
    }
    try_offload! { kernel = normalize_rows, args = (&mut rows,) }?;
    check("normalize_rows (Chunked<ROW>)", close(&rows, &want, 1e-6))?;

    let x: Vec<f64> = (0..n).map(|i| (i % 1000) as f64 * 0.25).collect();
    let groups = n.div_ceil(256);
    let mut sums = vec![0.0f64; groups];
    try_offload! {
        kernel = block_sums,
        args = (&mut sums, &x),
        workgroup_dim = [groups as u32, 1, 1],
        thread_dim = [256, 1, 1]
    }?;
    let want: Vec<f64> = x.chunks(256).map(|c| c.iter().sum()).collect();
    check("block_sums", close(&sums, &want, 1e-12))?;
    Ok(())
}
