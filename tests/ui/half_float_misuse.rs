use offload::prelude::*;

// `f16` and `bf16` have arithmetic, comparisons, `min`/`max`/`clamp`, conversions to and
// from `f32`/`f64` and atomic adds; the rest is refused where it is written.

#[offload_kernel]
fn half_atomics(total: Atomic<f16>, x: &[f16]) {
    total.fetch_max(0, x[0]);
}

#[offload_kernel]
fn half_in_a_subgroup(mut y: Region<f16, Linear1D>) {
    if let Some(v) = y.get_mut() {
        *v = subgroup_sum(*v);
    }
}

#[offload_kernel]
fn half_bits(mut y: Region<u16, Linear1D>, x: &[bf16]) {
    let i = y.index();
    if let Some(v) = y.get_mut() {
        *v = x[i].to_bits();
    }
}

fn main() {}
