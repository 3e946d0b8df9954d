//! The suite's kernels in our kernel language. Each has a twin in `cuda/suite.cu` with
//! the same name, the same algorithm and the same launch geometry; a comment on each
//! says where the two differ, if they do. The FIR filters, the block scan and the f32
//! matrix product are the ones the older subcommands time (`fir16`, `fir16_const`,
//! `block_scan`, `matmul` in `main.rs`), so the suite's figures line up with theirs.
//!
//! The `#[offload_kernel]` macro makes each kernel's descriptor a private static of this
//! module; the `pub(super)` statics at the end hand them to the harness, which compiles
//! them to PTX itself (`RawKernel`) to time them without the launch path around them.

use offload::prelude::*;

/// Elements per row of `softmax_rows`: one row per workgroup, one element per thread, so
/// it is also the workgroup size the kernel must be launched with.
pub(super) const SOFTMAX_ROW: usize = 256;

/// Weight of the centre of the 7-point stencil (`stencil7`).
const CENTRE: f32 = 0.25;

/// Weight of each of the six neighbours of the 7-point stencil.
const SIDE: f32 = 0.125;

/// STREAM copy: `c = a`.
#[offload_kernel]
pub(super) fn stream_copy(mut c: Region<f32, Linear1D>, a: &[f32]) {
    let i = c.index();
    if let Some(v) = c.get_mut() {
        *v = a[i];
    }
}

/// STREAM scale: `b = s * c`.
#[offload_kernel]
pub(super) fn stream_scale(mut b: Region<f32, Linear1D>, c: &[f32], s: f32) {
    let i = b.index();
    if let Some(v) = b.get_mut() {
        *v = s * c[i];
    }
}

/// STREAM add: `c = a + b`.
#[offload_kernel]
pub(super) fn stream_add(mut c: Region<f32, Linear1D>, a: &[f32], b: &[f32]) {
    let i = c.index();
    if let Some(v) = c.get_mut() {
        *v = a[i] + b[i];
    }
}

/// STREAM triad: `a = b + s * c` (one FMA on a GPU, as nvcc contracts it too).
#[offload_kernel]
pub(super) fn stream_triad(mut a: Region<f32, Linear1D>, b: &[f32], c: &[f32], s: f32) {
    let i = a.index();
    if let Some(v) = a.get_mut() {
        *v = b[i] + s * c[i];
    }
}

/// The triad in `f16`: each operation rounded to `f16`, as the `half` crate computes.
#[offload_kernel]
pub(super) fn half_triad(mut a: Region<f16, Linear1D>, b: &[f16], c: &[f16], s: f16) {
    let i = a.index();
    if let Some(v) = a.get_mut() {
        *v = b[i] + s * c[i];
    }
}

/// The triad in `bf16`.
#[offload_kernel]
pub(super) fn bfloat_triad(mut a: Region<bf16, Linear1D>, b: &[bf16], c: &[bf16], s: bf16) {
    let i = a.index();
    if let Some(v) = a.get_mut() {
        *v = b[i] + s * c[i];
    }
}

/// The dot product of `x` and `y` added into `total[0]`: a grid-stride loop per thread,
/// `workgroup_sum` for the workgroup's total, one atomic add per workgroup. The CUDA
/// twin spells `workgroup_sum` out as this compiler builds it (`block_sum` there).
#[offload_kernel]
pub(super) fn dot(total: Atomic<f32>, x: &[f32], y: &[f32], stride: usize) {
    let mut acc = 0.0f32;
    let mut j = workgroup_idx(0) * workgroup_dim(0) + thread_idx(0);
    while j < x.len() {
        acc += x[j] * y[j];
        j += stride;
    }
    let block = workgroup_sum(acc);
    if thread_idx(0) == 0 {
        total.fetch_add(0, block);
    }
}

/// The sum of `x` added into `total[0]`, as `dot` computes its products' sum.
///
/// Not `reduce_sum` of `main.rs`: that one combines the warp totals with a shuffle that
/// assumes 32-lane subgroups, which is wrong on the CPU backend (one-lane subgroups), so
/// `suite-check` could not check it there. `workgroup_sum` is right on every backend.
#[offload_kernel]
pub(super) fn sum(total: Atomic<f32>, x: &[f32], stride: usize) {
    let mut acc = 0.0f32;
    let mut j = workgroup_idx(0) * workgroup_dim(0) + thread_idx(0);
    while j < x.len() {
        acc += x[j];
        j += stride;
    }
    let block = workgroup_sum(acc);
    if thread_idx(0) == 0 {
        total.fetch_add(0, block);
    }
}

/// A 7-point stencil over the interior of a 3-D grid (x fastest): each interior point
/// becomes a weighted sum of itself and its six neighbours; the faces are left alone.
/// The neighbours are read from a slice at computed offsets, each read bounds-checked
/// (the CUDA twin has no checks).
#[offload_kernel]
pub(super) fn stencil7(mut y: Region<f32, Linear3D>, x: &[f32]) {
    let nx = y.width();
    let plane = nx * y.height();
    let c = y.z() * plane + y.y() * nx + y.x();
    if let Some(v) = y.get_mut() {
        let around = x[c - 1] + x[c + 1] + x[c - nx] + x[c + nx] + x[c - plane] + x[c + plane];
        *v = CENTRE * x[c] + SIDE * around;
    }
}

/// A Jacobi sweep for Laplace's equation: each interior point becomes the average of
/// its four neighbours. Launched over `interior(1)` regions, so every thread has all
/// four; `get_clamped` still clamps (no clamp ever bites), where the CUDA twin indexes
/// directly.
#[offload_kernel]
pub(super) fn jacobi(mut next: Region<f32, Linear2D>, grid: Region<f32, Stencil2D<1>>) {
    let sum = grid.get_clamped(-1, 0)
        + grid.get_clamped(1, 0)
        + grid.get_clamped(0, -1)
        + grid.get_clamped(0, 1);
    if let Some(v) = next.get_mut() {
        *v = 0.25 * sum;
    }
}

/// A 5-point relaxation over the whole grid, the edges clamped (`examples/stencil.rs`):
/// half the centre plus an eighth of each neighbour. The CUDA twin clamps the same way.
#[offload_kernel]
pub(super) fn stencil5(mut next: Region<f32, Linear2D>, grid: Region<f32, Stencil2D<1>>) {
    let centre = grid.get_clamped(0, 0);
    let around = grid.get_clamped(-1, 0)
        + grid.get_clamped(1, 0)
        + grid.get_clamped(0, -1)
        + grid.get_clamped(0, 1);
    if let Some(v) = next.get_mut() {
        *v = 0.5 * centre + 0.125 * around;
    }
}

/// `matmul` of `main.rs` in f64: 16×16 tiles of A and B in shared memory.
#[offload_kernel]
pub(super) fn matmul_f64(mut c: Region<f64, Linear2D>, a: &[f64], b: &[f64], n: usize) {
    let mut ta = Shared::<f64, 256>::new();
    let mut tb = Shared::<f64, 256>::new();
    let tx = thread_idx(0);
    let ty = thread_idx(1);
    let row = c.row();
    let col = c.col();
    let mut acc = 0.0f64;
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

/// A 256-bin histogram of the low byte of each word, with one global atomic add per
/// element (the language has no atomics on shared memory, so no per-workgroup bins; the
/// CUDA twin does the same). One thread per element, without a region: the launch gives
/// the workgroups.
#[offload_kernel]
pub(super) fn histogram256(bins: Atomic<u32>, x: &[u32]) {
    let i = workgroup_idx(0) * workgroup_dim(0) + thread_idx(0);
    if i < x.len() {
        bins.fetch_add((x[i] & 255) as usize, 1);
    }
}

/// A softmax of each row of [`SOFTMAX_ROW`] values: one row per workgroup, one value per
/// thread; `workgroup_max` and `workgroup_sum` give the row's maximum and the sum of its
/// exponentials.
#[offload_kernel]
pub(super) fn softmax_rows(mut y: Region<f32, Linear1D>, x: &[f32]) {
    let v = x.get(y.index()).copied().unwrap_or(f32::NEG_INFINITY);
    let top = workgroup_max(v);
    let e = (v - top).exp();
    let total = workgroup_sum(e);
    if let Some(out) = y.get_mut() {
        *out = e / total;
    }
}

/// [`softmax_rows`] over `bf16` values: read and written in `bf16`, computed in `f32`
/// (the maximum, the exponentials and their sum), each result rounded once.
#[offload_kernel]
pub(super) fn softmax_rows_bf16(mut y: Region<bf16, Linear1D>, x: &[bf16]) {
    let v = x
        .get(y.index())
        .copied()
        .unwrap_or(bf16::NEG_INFINITY)
        .to_f32();
    let top = workgroup_max(v);
    let e = (v - top).exp();
    let total = workgroup_sum(e);
    if let Some(out) = y.get_mut() {
        *out = bf16::from_f32(e / total);
    }
}

/// `y = a * x + y` in `bf16`, each operation rounded to `bf16`.
#[offload_kernel]
pub(super) fn bfloat_saxpy(mut y: Region<bf16, Linear1D>, x: &[bf16], a: bf16) {
    let i = y.index();
    if let Some(v) = y.get_mut() {
        *v = a * x[i] + *v;
    }
}

/// The descriptors of this module's kernels, for `RawKernel::load`.
pub(super) static STREAM_COPY: &offload::KernelDescriptor = &__OFFLOAD_KERNEL_stream_copy;
pub(super) static STREAM_SCALE: &offload::KernelDescriptor = &__OFFLOAD_KERNEL_stream_scale;
pub(super) static STREAM_ADD: &offload::KernelDescriptor = &__OFFLOAD_KERNEL_stream_add;
pub(super) static STREAM_TRIAD: &offload::KernelDescriptor = &__OFFLOAD_KERNEL_stream_triad;
pub(super) static HALF_TRIAD: &offload::KernelDescriptor = &__OFFLOAD_KERNEL_half_triad;
pub(super) static BFLOAT_TRIAD: &offload::KernelDescriptor = &__OFFLOAD_KERNEL_bfloat_triad;
pub(super) static DOT: &offload::KernelDescriptor = &__OFFLOAD_KERNEL_dot;
pub(super) static SUM: &offload::KernelDescriptor = &__OFFLOAD_KERNEL_sum;
pub(super) static STENCIL7: &offload::KernelDescriptor = &__OFFLOAD_KERNEL_stencil7;
pub(super) static JACOBI: &offload::KernelDescriptor = &__OFFLOAD_KERNEL_jacobi;
pub(super) static STENCIL5: &offload::KernelDescriptor = &__OFFLOAD_KERNEL_stencil5;
pub(super) static MATMUL_F64: &offload::KernelDescriptor = &__OFFLOAD_KERNEL_matmul_f64;
pub(super) static HISTOGRAM256: &offload::KernelDescriptor = &__OFFLOAD_KERNEL_histogram256;
pub(super) static SOFTMAX_ROWS: &offload::KernelDescriptor = &__OFFLOAD_KERNEL_softmax_rows;
pub(super) static SOFTMAX_ROWS_BF16: &offload::KernelDescriptor =
    &__OFFLOAD_KERNEL_softmax_rows_bf16;
pub(super) static BFLOAT_SAXPY: &offload::KernelDescriptor = &__OFFLOAD_KERNEL_bfloat_saxpy;
