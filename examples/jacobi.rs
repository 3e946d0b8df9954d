//! Jacobi iterations for Laplace's equation on a square plate whose edges are held at
//! fixed temperatures: each sweep writes only the interior (`interior(1)`), so the edges
//! stay as they are and no thread needs a bounds test of its own. Two buffers swap roles
//! each sweep. Checked against the same sweeps on the host.
//! `cargo run --release --example jacobi [N] [SWEEPS]`.

use offload::prelude::*;

#[offload_kernel]
fn sweep(mut next: Region<f64, Linear2D>, grid: Region<f64, Stencil2D<1>>) {
    // Every thread of an interior region has all four neighbours.
    let sum = grid.get_clamped(-1, 0)
        + grid.get_clamped(1, 0)
        + grid.get_clamped(0, -1)
        + grid.get_clamped(0, 1);
    if let Some(v) = next.get_mut() {
        *v = 0.25 * sum;
    }
}

fn host_sweep(next: &mut [f64], grid: &[f64], n: usize) {
    for r in 1..n - 1 {
        for c in 1..n - 1 {
            let i = r * n + c;
            next[i] = 0.25 * (grid[i - n] + grid[i + n] + grid[i - 1] + grid[i + 1]);
        }
    }
}

pub fn main() -> Result<(), Error> {
    let mut args = std::env::args().skip(1).map(|s| s.parse::<usize>().ok());
    let n = args.next().flatten().unwrap_or(512);
    let sweeps = args.next().flatten().unwrap_or(100);
    println!("device: {}", offload::default_device()?);
    // A hot top edge, a cold bottom one, a gradient down the sides.
    let mut a = vec![0.0f64; n * n];
    for r in 0..n {
        let t = 100.0 * (1.0 - r as f64 / (n - 1) as f64);
        a[r * n] = t;
        a[r * n + n - 1] = t;
    }
    a[..n].fill(100.0);
    let mut b = a.clone();
    let (mut host_a, mut host_b) = (a.clone(), b.clone());
    for _ in 0..sweeps {
        try_offload! {
            kernel = sweep,
            args = (Region::new_2d(&mut b, n).interior(1), Region::stencil(&a, n).interior(1))
        }?;
        std::mem::swap(&mut a, &mut b);
        host_sweep(&mut host_b, &host_a, n);
        std::mem::swap(&mut host_a, &mut host_b);
    }
    let worst = a
        .iter()
        .zip(&host_a)
        .map(|(g, w)| (g - w).abs())
        .fold(0.0, f64::max);
    let centre = a[n / 2 * n + n / 2];
    if worst == 0.0 {
        println!("ok: {sweeps} sweeps over a {n}x{n} plate match the host; centre {centre:.4}");
        Ok(())
    } else {
        eprintln!("FAILED: {sweeps} sweeps differ from the host's by up to {worst:e}");
        std::process::exit(1);
    }
}
