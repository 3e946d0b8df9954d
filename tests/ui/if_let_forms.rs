use offload::prelude::*;

// Only `get_mut()` of a region, `get(dr, dc)` of a stencil and `get(i)`, `first()`,
// `last()` of a slice are taken apart by `if let` (and `let ... else`, `while let`).
#[offload_kernel]
fn first(mut out: Region<f32, Linear1D>, x: &[f32]) {
    if let Some(&a) = x.iter().max_by(|p, q| p.total_cmp(q)) {
        if let Some(v) = out.get_mut() {
            *v = a;
        }
    }
}

// `let ... else` takes the same patterns.
#[offload_kernel]
fn pair(mut out: Region<f32, Linear1D>, x: &[f32]) {
    let [a, b] = [x[0], x[1]] else {
        return;
    };
    let Some(v) = out.get_mut() else {
        return;
    };
    *v = a + b;
}

fn main() {}
