use offload::prelude::*;

#[offload_kernel]
fn k(a: f32) {
    let xs = [a, a];
}

fn main() {}
