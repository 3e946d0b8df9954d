//! A `bf16` matrix product on the tensor cores, in safe code: `c = a × b` for row-major
//! `m × k` and `k × n` matrices of `bf16`, summed in `f32` into an `m × n` matrix of `f32`.
//!
//! Each workgroup owns a strip of `STRIP` rows of `c` (the chunks of `CHUNK` elements its
//! threads own, `Chunked<CHUNK>`, are exactly that strip), and walks along it
//! `BN` columns at a time: it zeroes an `f32` accumulator tile, then for every `BK` of
//! the depth stages `STRIP × BK` of `a` and `BK × BN` of `b` in shared tiles
//! (`fill_from`, by the whole workgroup), and adds their product with `tile_mma`
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
    // Rows padded by 8 slots: the 8 rows a warp's `ldmatrix` or accumulator access
    // reads at once then start in different memory banks.
    let mut acc = Shared2D::<f32, STRIP, BN, 8>::new();
    let mut at = Shared2D::<bf16, STRIP, BK, 8>::new();
    let mut bt = Shared2D::<bf16, BK, BN, 8>::new();
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
            at.fill_from(&a, k, top, depth);
            bt.fill_from(&b, n, depth, left);
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
