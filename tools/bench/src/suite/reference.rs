//! Inputs and host references for the suite, shared by `suite` (which checks both sides
//! on the GPU once before timing them) and `suite-check` (which checks our kernels on the
//! default device).
//!
//! The inputs are multiples of 1/64 in [-4, 4): nine significant bits. Products of two
//! and short sums of those are exact in f32, so the elementwise kernels, the stencils, the
//! FIR filter and the block scan give exactly the host's values whatever the order of
//! the additions and whether a multiply and an add are fused; the comparisons still
//! allow a little, so that only a wrong result fails. The long sums (dot, sum, GEMM) and
//! the softmax are compared against f64 references with tolerances that say why.

use anyhow::{Result, bail};
use rayon::prelude::*;

/// `n` deterministic values, multiples of 1/64 in [-4, 4); `seed` picks the sequence.
pub(super) fn floats(n: usize, seed: u64) -> Vec<f32> {
    (0..n)
        .into_par_iter()
        .map(|i| (mix(i as u64, seed) % 512) as f32 / 64.0 - 4.0)
        .collect()
}

/// `n` deterministic words whose low bytes are spread evenly over 0..256.
pub(super) fn words(n: usize, seed: u64) -> Vec<u32> {
    (0..n)
        .into_par_iter()
        .map(|i| mix(i as u64, seed) as u32)
        .collect()
}

/// A hash of `i` (SplitMix64's finaliser), so that neighbouring elements differ.
fn mix(i: u64, seed: u64) -> u64 {
    let mut z = i.wrapping_add(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15));
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The taps of the FIR filters: `FIR_TAPS` of `main.rs`, which `fir16_const` and the CUDA
/// twins' `__constant__` array spell out.
pub(super) fn fir(x: &[f32], n: usize) -> Vec<f32> {
    (0..n)
        .into_par_iter()
        .map(|i| (0..16).fold(0.0f32, |acc, k| crate::FIR_TAPS[k].mul_add(x[i + k], acc)))
        .collect()
}

/// The inclusive scan of each block of 256 elements.
pub(super) fn block_scan(x: &[f32]) -> Vec<f32> {
    let mut y = x.to_vec();
    y.par_chunks_mut(256).for_each(|block| {
        for k in 1..block.len() {
            block[k] += block[k - 1];
        }
    });
    y
}

/// The sum of `x[i] * y[i]` in f64, and the sum of the products' magnitudes, which
/// bounds the rounding error of any order of f32 additions.
pub(super) fn dot(x: &[f32], y: &[f32]) -> (f64, f64) {
    x.par_iter()
        .zip(y)
        .map(|(a, b)| {
            let p = *a as f64 * *b as f64;
            (p, p.abs())
        })
        .reduce(|| (0.0, 0.0), |a, b| (a.0 + b.0, a.1 + b.1))
}

/// The sum of `x` in f64, and the sum of its magnitudes.
pub(super) fn sum(x: &[f32]) -> (f64, f64) {
    x.par_iter()
        .map(|v| (*v as f64, v.abs() as f64))
        .reduce(|| (0.0, 0.0), |a, b| (a.0 + b.0, a.1 + b.1))
}

/// Whether a float reduction's result `got` is within `1e-4` of the magnitudes' sum of
/// the exact one: f32 partial sums in an order the atomics choose, as `cuda/reduce.cu`
/// checks too.
pub(super) fn reduction(label: &str, got: f32, (want, magnitude): (f64, f64)) -> Result<()> {
    let diff = (got as f64 - want).abs();
    if diff.is_nan() || diff > 1e-4 * magnitude.max(1.0) {
        bail!("{label}: got {got}, the host {want} (|difference| {diff:e})");
    }
    Ok(())
}

/// The 7-point stencil over the interior of an `nx` × `ny` × `nz` grid; the faces 0.
pub(super) fn stencil7(x: &[f32], nx: usize, ny: usize, nz: usize) -> Vec<f32> {
    let plane = nx * ny;
    let mut y = vec![0.0f32; x.len()];
    y.par_chunks_mut(plane)
        .enumerate()
        .filter(|(k, _)| *k > 0 && *k < nz - 1)
        .for_each(|(k, out)| {
            for j in 1..ny - 1 {
                for i in 1..nx - 1 {
                    let c = k * plane + j * nx + i;
                    let around =
                        x[c - 1] + x[c + 1] + x[c - nx] + x[c + nx] + x[c - plane] + x[c + plane];
                    out[j * nx + i] = 0.25 * x[c] + 0.125 * around;
                }
            }
        });
    y
}

/// A Jacobi sweep over the interior of a `w`-wide grid; the edges 0.
pub(super) fn jacobi(grid: &[f32], w: usize) -> Vec<f32> {
    let h = grid.len() / w;
    let mut next = vec![0.0f32; grid.len()];
    next.par_chunks_mut(w)
        .enumerate()
        .filter(|(r, _)| *r > 0 && *r < h - 1)
        .for_each(|(r, out)| {
            for (c, v) in out.iter_mut().enumerate().take(w - 1).skip(1) {
                let i = r * w + c;
                *v = 0.25 * (grid[i - w] + grid[i + w] + grid[i - 1] + grid[i + 1]);
            }
        });
    next
}

/// The 5-point relaxation over a whole `w`-wide grid, the edges clamped.
pub(super) fn stencil5(grid: &[f32], w: usize) -> Vec<f32> {
    let h = grid.len() / w;
    let mut next = vec![0.0f32; grid.len()];
    next.par_chunks_mut(w).enumerate().for_each(|(r, out)| {
        let (up, down) = (r.saturating_sub(1), (r + 1).min(h - 1));
        for (c, v) in out.iter_mut().enumerate() {
            let (left, right) = (c.saturating_sub(1), (c + 1).min(w - 1));
            let around =
                grid[up * w + c] + grid[down * w + c] + grid[r * w + left] + grid[r * w + right];
            *v = 0.5 * grid[r * w + c] + 0.125 * around;
        }
    });
    next
}

/// The 256-bin histogram of the words' low bytes.
pub(super) fn histogram(x: &[u32]) -> Vec<u32> {
    x.par_chunks(1 << 16)
        .map(|chunk| {
            let mut bins = vec![0u32; 256];
            for v in chunk {
                bins[(v & 255) as usize] += 1;
            }
            bins
        })
        .reduce(
            || vec![0u32; 256],
            |mut a, b| {
                a.iter_mut().zip(&b).for_each(|(a, b)| *a += b);
                a
            },
        )
}

/// The softmax of each row of `row` values, in f64.
pub(super) fn softmax(x: &[f32], row: usize) -> Vec<f64> {
    x.par_chunks(row)
        .flat_map_iter(|r| {
            let top = r.iter().fold(f32::NEG_INFINITY, |a, &b| a.max(b)) as f64;
            let sum: f64 = r.iter().map(|&v| (v as f64 - top).exp()).sum();
            r.iter().map(move |&v| (v as f64 - top).exp() / sum)
        })
        .collect()
}

/// Compares a softmax with the f64 reference: within 1e-5 of each value, relatively
/// (the device's `expf` is within 2 ulp, and the row sums differ in order), plus 1e-9.
pub(super) fn softmax_close(label: &str, got: &[f32], want: &[f64]) -> Result<()> {
    report_mismatches(label, got, want, |&g, &w| {
        let d = (g as f64 - w).abs();
        d.is_nan() || d > 1e-5 * w.abs() + 1e-9
    })
}

/// [`softmax_close`] for results rounded to `bf16`: within its unit roundoff (2^-8
/// relatively, half a step of its 8-bit significand) of the reference, plus what
/// `softmax_close` allows.
pub(super) fn softmax_close_bf16(label: &str, got: &[f32], want: &[f64]) -> Result<()> {
    report_mismatches(label, got, want, |&g, &w| {
        let d = (g as f64 - w).abs();
        d.is_nan() || d > (2f64.powi(-8) + 1e-5) * w.abs() + 1e-9
    })
}

/// Compares `got` with `want` element by element, allowing `1e-5` relative to
/// `max(1, |want|)` (the inputs make these results exact, see the module docs).
pub(super) fn close(label: &str, got: &[f32], want: &[f32]) -> Result<()> {
    if got.len() != want.len() {
        bail!("{label}: {} values, the host has {}", got.len(), want.len());
    }
    report_mismatches(label, got, want, |&g, &w| {
        let d = (g - w).abs();
        d.is_nan() || d > 1e-5 * w.abs().max(1.0)
    })
}

/// An error naming how many pairs `off` rejects and the first of them, if any.
fn report_mismatches<G, W>(
    label: &str,
    got: &[G],
    want: &[W],
    off: impl Fn(&G, &W) -> bool + Sync,
) -> Result<()>
where
    G: Sync + std::fmt::Display,
    W: Sync + std::fmt::Display,
{
    let wrong = got.par_iter().zip(want).filter(|(g, w)| off(g, w)).count();
    if wrong != 0 {
        let (i, (g, w)) = got
            .iter()
            .zip(want)
            .enumerate()
            .find(|(_, (g, w))| off(g, w))
            .expect("a mismatch was counted");
        bail!(
            "{label}: {wrong} of {} values differ from the host's, first at {i}: {g} against {w}",
            got.len()
        );
    }
    Ok(())
}

/// Compares integer results exactly.
pub(super) fn equal(label: &str, got: &[u32], want: &[u32]) -> Result<()> {
    if let Some(i) = (0..want.len()).find(|&i| got.get(i) != Some(&want[i])) {
        bail!(
            "{label}: element {i} is {:?}, the host's {}",
            got.get(i),
            want[i]
        );
    }
    Ok(())
}

/// Elements of a matrix product that [`gemm`] checks: spread over rows and columns.
const GEMM_SAMPLES: u64 = 64;

/// The element type of a matrix product, with what its check allows.
pub(super) trait GemmFloat: Copy + Send + Sync + Into<f64> + 'static {
    /// Relative error allowed against the sum of the products' magnitudes: a few units
    /// of the type's rounding per accumulated term's worth of the sum.
    const TOLERANCE: f64;
    fn from_f32(v: f32) -> Self;
}

impl GemmFloat for f32 {
    const TOLERANCE: f64 = 1e-4;
    fn from_f32(v: f32) -> Self {
        v
    }
}

impl GemmFloat for f64 {
    const TOLERANCE: f64 = 1e-12;
    fn from_f32(v: f32) -> Self {
        v as f64
    }
}

/// Checks [`GEMM_SAMPLES`] elements of `c = a * b` (row-major `n` × `n`) against f64
/// sums.
pub(super) fn gemm<T: GemmFloat>(label: &str, a: &[T], b: &[T], c: &[T], n: usize) -> Result<()> {
    let mut wrong = Vec::new();
    for s in 0..GEMM_SAMPLES {
        let row = (s.wrapping_mul(2_654_435_761) % n as u64) as usize;
        let col = (s.wrapping_mul(40_503) % n as u64) as usize;
        let (mut want, mut scale) = (0.0f64, 0.0f64);
        for k in 0..n {
            let p = a[row * n + k].into() * b[k * n + col].into();
            want += p;
            scale += p.abs();
        }
        let got: f64 = c[row * n + col].into();
        let diff = (got - want).abs();
        if diff.is_nan() || diff > T::TOLERANCE * scale.max(1.0) {
            wrong.push(format!("({row}, {col}): {got} against {want}"));
        }
    }
    if !wrong.is_empty() {
        bail!(
            "{label}: {} of {GEMM_SAMPLES} sampled elements differ from the host's: {}",
            wrong.len(),
            wrong.join(", ")
        );
    }
    Ok(())
}
