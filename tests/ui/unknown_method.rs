use offload::prelude::*;

#[offload_kernel]
fn k(x: &[f32]) {
    let n = x.iter();
}

fn main() {}
