use offload::prelude::*;

#[offload_kernel]
fn saxpy(mut y: Region<f64, Linear1D>, x: &[f64], a: f64) {
    let i = y.index();
    if let Some(v) = y.get_mut() {
        *v = a * x[i] + *v;
    }
}

#[offload_kernel]
fn count(hits: Atomic<u32>, x: &[f64]) {
    let i = workgroup_idx(0) * workgroup_dim(0) + thread_idx(0);
    if i < x.len() {
        hits.fetch_add(0, 1);
    }
}

fn main() {
    let y = vec![1.0f64; 4];
    let x = vec![2.0f64; 4];
    offload! { kernel = saxpy, args = (y, x, 2.0) };
    let hits = vec![0u32; 1];
    offload! { kernel = count, args = (hits, &x) };
}
