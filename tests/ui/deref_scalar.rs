use offload::prelude::*;

#[offload_kernel]
fn k(a: f32) {
    let b = *a;
}

fn main() {}
