//! A `bf16` matrix product on the tensor cores, in safe code: `c = a × b` for row-major
//! `m × k` and `k × n` matrices of `bf16`, summed in `f32` into an `m × n` matrix of `f32`.
//!
//! Each workgroup owns a strip of `STRIP` rows of `c` (the chunks of `CHUNK` elements its
//! threads own, `Chunked<CHUNK>`, are exactly that strip), and walks along it
//! `BN` columns at a time: it zeroes an `f32` accumulator tile, then for every `BK` of
//! the depth stages `STRIP × BK` of `a` and `BK × BN` of `b` in shared tiles, each
//! thread filling its own slots (`write_nth`), and adds their product with `tile_mma`
//! (on an NVIDIA GPU, `ldmatrix` and `mma.sync` on the tensor cores, each warp taking
//! 16 × 16 blocks of the accumulator; loops on the CPU). Each thread then copies the
//! part of its chunk the accumulator holds. Elements past the matrices' edges are
//! staged as zeros, so any `m` and `k` work; `n` is a multiple of 512 up to 16384 (a
//! workgroup is `n / 16` threads, whole warps, at most 1024).
//!
//! `cargo run --release --example gemm_bf16 [M N K]`, checked against a host product.

use offload::prelude::*;

/// Rows of `c` per workgroup.
const STRIP: usize = 32;
/// Columns of `c` per accumulator tile.
const BN: usize = 128;
/// Depth of each `tile_mma`.
const BK: usize = 64;
/// Elements of `c` per thread: a workgroup of `STRIP * n / CHUNK` threads owns `STRIP`
/// whole rows.
const CHUNK: usize = 512;

#[offload_kernel]
fn gemm_bf16(mut c: Region<f32, Chunked<CHUNK>>, a: &[bf16], b: &[bf16], n: usize, k: usize) {
    let mut acc = Shared2D::<f32, STRIP, BN>::new();
    let mut at = Shared2D::<bf16, STRIP, BK>::new();
    let mut bt = Shared2D::<bf16, BK, BN>::new();
    let (threads, rank) = (workgroup_dim(0), thread_rank());
    let top = workgroup_idx(0) * STRIP;
    // This thread's chunk: row `mine / n` of the strip, from column `mine % n`.
    let mine = rank * CHUNK;
    let (row, first) = (mine / n, mine % n);
    let mut left = 0;
    while left < n {
        for s in 0..acc.len().div_ceil(threads) {
            if s * threads + rank < acc.len() {
                acc.write_nth(s, 0.0);
            }
        }
        // (`tile_mma` waits too, but with `k == 0` there is none.)
        sync_threads();
        let mut depth = 0;
        while depth < k {
            for s in 0..at.len().div_ceil(threads) {
                let e = s * threads + rank;
                let (r, d) = (top + e / BK, depth + e % BK);
                if e < at.len() {
                    // Past the depth, an index past the end: a zero.
                    let at_a = if d < k { r * k + d } else { a.len() };
                    at.write_nth(s, a.get(at_a).copied().unwrap_or(bf16::ZERO));
                }
            }
            for s in 0..bt.len().div_ceil(threads) {
                let e = s * threads + rank;
                let (d, col) = (depth + e / BN, left + e % BN);
                if e < bt.len() {
                    let at_b = if col < n { d * n + col } else { b.len() };
                    bt.write_nth(s, b.get(at_b).copied().unwrap_or(bf16::ZERO));
                }
            }
            tile_mma(&mut acc, &at, &bt);
            depth += BK;
        }
        if let Some(out) = c.get_mut() {
            let end = (first + out.len()).min(left + BN);
            let mut col = first.max(left);
            while col < end {
                out[col - first] = acc[(row, col - left)];
                col += 1;
            }
        }
        // The accumulator is zeroed again next: every thread has read it first.
        sync_threads();
        left += BN;
    }
}

/// `c = a × b` on `c`'s device, for an `m × k` `a` and a `k × n` `b` (`m = c.len() / n`).
pub fn gemm(
    c: &mut DeviceBuffer<f32>,
    a: &DeviceBuffer<bf16>,
    b: &DeviceBuffer<bf16>,
    n: usize,
    k: usize,
) -> Result<(), Error> {
    let m = c.len() / n;
    try_offload! {
        kernel = gemm_bf16,
        args = (c, a, b, n, k),
        workgroup_dim = [m.div_ceil(STRIP) as u32, 1, 1],
        thread_dim = [(STRIP * n / CHUNK) as u32, 1, 1]
    }
}

pub fn main() -> Result<(), Error> {
    let sizes: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|s| s.parse().ok())
        .collect();
    let (m, n, k) = match sizes[..] {
        [m, n, k] => (m, n, k),
        _ => (200, 512, 300),
    };
    let device = offload::default_device()?;
    println!("device: {device}");
    // Quarters from -2 to 2: every product and partial sum is exact in `f32`, so the
    // result is the host's whatever order the tensor cores add in.
    let quarter = |i: usize| ((i * 37 + 11) % 17) as f32 / 4.0 - 2.0;
    let a: Vec<bf16> = (0..m * k).map(|i| bf16::from_f32(quarter(i))).collect();
    let b: Vec<bf16> = (0..k * n).map(|i| bf16::from_f32(quarter(i + 5))).collect();
    let mut c = DeviceBuffer::<f32>::zeros(&device, m * n)?;
    let (da, db) = (
        DeviceBuffer::from_slice(&device, &a)?,
        DeviceBuffer::from_slice(&device, &b)?,
    );
    gemm(&mut c, &da, &db, n, k)?;
    let c = c.to_vec()?;
    let mut wrong = 0;
    for i in 0..m {
        for j in 0..n {
            let want: f32 = (0..k)
                .map(|d| a[i * k + d].to_f32() * b[d * n + j].to_f32())
                .sum();
            wrong += (c[i * n + j] != want) as usize;
        }
    }
    if wrong == 0 {
        println!(
            "ok: {m}x{k} by {k}x{n} bf16 product matches the host (c[0][0] = {})",
            c[0]
        );
        Ok(())
    } else {
        eprintln!(
            "FAILED: {wrong} of {} elements differ from the host product",
            m * n
        );
        std::process::exit(1);
    }
}
