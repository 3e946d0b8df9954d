// One small kernel per language feature and strategy, for MIR and offload-dialect
// snapshots (tests/integration/stages.rs).
use offload::prelude::*;

#[offload_kernel]
fn control_flow(mut y: Region<i32, Linear1D>, limit: i32) {
    let i = y.index() as i32;
    if let Some(v) = y.get_mut() {
        let mut acc = 0;
        let mut k = 0;
        while k < i {
            k += 1;
            if k % 2 == 0 {
                continue;
            }
            if acc > limit {
                break;
            }
            acc += k;
        }
        *v = if acc > 10 { acc } else { -acc };
    }
}

#[offload_kernel]
fn loops_and_match(mut y: Region<u32, Linear1D>) {
    let i = y.index() as u32;
    if let Some(v) = y.get_mut() {
        let mut acc = 0;
        for k in (0..i).step_by(3) {
            acc += k;
        }
        *v = match acc % 10 {
            0 => 1,
            1..=4 => 2,
            _ => 3,
        };
    }
}

#[offload_kernel]
fn math_and_casts(mut y: Region<f32, Linear1D>, x: &[f64]) {
    let i = y.index();
    if let Some(v) = y.get_mut() {
        let a = x[i] as f32;
        *v = a.sqrt().mul_add(2.0, a.sin()) + (a as i32).count_ones() as f32 + f32::consts::PI;
    }
}

#[offload_kernel]
fn checked(mut y: Region<i64, Linear1D>, d: &[i64]) {
    let i = y.index();
    if let Some(v) = y.get_mut() {
        assert!(d[i] != 7, "seven is not allowed");
        *v = 1000 / d[i];
    }
}

#[offload_kernel]
fn grid(mut y: Region<f32, Linear2D>, img: Region<f32, Stencil2D<1>>) {
    let up = img.get_clamped(-1, 0);
    if let Some(v) = y.get_mut() {
        *v = up + y.row() as f32;
    }
}

#[offload_kernel]
fn chunks(mut y: Region<u8, Chunked<4>>) {
    if let Some(c) = y.get_mut() {
        for k in 0..c.len() {
            c[k] = k as u8;
        }
    }
}

#[offload_kernel]
fn generic_scale<T: Float>(mut y: Region<T, Linear1D>, a: T) {
    if let Some(v) = y.get_mut() {
        *v = *v * a + T::ONE;
    }
}

#[offload_device]
fn square(x: f32) -> f32 {
    x * x
}

#[offload_kernel]
fn calls_device(mut y: Region<f32, Linear1D>) {
    if let Some(v) = y.get_mut() {
        *v = square(*v) + 1.0;
    }
}

#[offload_kernel]
fn workgroup_sum(sums: Atomic<f32>, x: &[f32]) {
    let mut tile = Shared::<f32, 256>::new();
    let mut cache = DynShared::<f32>::new();
    let t = thread_idx(0);
    let i = workgroup_idx(0) * workgroup_dim(0) + t;
    let v = if i < x.len() { x[i] } else { 0.0 };
    tile.write(subgroup_sum(v));
    cache.write(v);
    sync_threads();
    let lane = subgroup_lane();
    let w = if lane * subgroup_size() < tile.len() {
        tile[lane * subgroup_size()]
    } else {
        0.0
    };
    let total = subgroup_sum(w);
    let first = cache[0];
    if t == 0 && first >= 0.0 {
        sums.fetch_add(workgroup_idx(0), total);
    }
}

#[offload_kernel]
fn half_precision(mut y: Region<f16, Linear1D>, x: &[bf16], a: f16) {
    let i = y.index();
    if let Some(v) = y.get_mut() {
        let b = bf16::from_f32(x[i].to_f32() * 2.0) - x[i];
        *v = a * *v + f16::from_f64(b.to_f64());
    }
}

/// A workgroup's product of two `bf16` tiles: `ldmatrix` and `mma.sync` on NVIDIA GPUs,
/// loops on the CPU.
#[offload_kernel]
fn tile_product(mut c: Region<f32, Linear1D>, a: &[bf16], b: &[bf16]) {
    let mut acc = Shared2D::<f32, 16, 16>::new();
    let mut at = Shared2D::<bf16, 16, 16>::new();
    let mut bt = Shared2D::<bf16, 16, 16>::new();
    let r = thread_rank();
    at.write_nth(0, if r < a.len() { a[r] } else { bf16::ZERO });
    bt.write_nth(0, if r < b.len() { b[r] } else { bf16::ZERO });
    tile_mma(&mut acc, &at, &bt);
    if let Some(o) = c.get_mut() {
        *o = acc[(r / 16 % 16, r % 16)];
    }
}
