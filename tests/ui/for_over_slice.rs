use offload::prelude::*;

#[offload_kernel]
fn k(x: &[f32]) {
    for v in x {}
}

fn main() {}
