use offload::prelude::*;

// `for v in x`, `x.iter()` and `x.iter().enumerate()` run over a slice; other iterator
// adapters do not.
#[offload_kernel]
fn k(x: &[f32]) {
    for v in x.iter().skip(1) {}
}

fn main() {}
