use offload::prelude::*;

// Only `get_mut()` of a region, `get(dr, dc)` of a stencil and `get(i)`, `first()`,
// `last()` of a slice are taken apart by `if let`.
#[offload_kernel]
fn first(mut out: Region<f32, Linear1D>, x: &[f32]) {
    if let Some(&a) = x.iter().max_by(|p, q| p.total_cmp(q)) {
        if let Some(v) = out.get_mut() {
            *v = a;
        }
    }
}

fn main() {}
