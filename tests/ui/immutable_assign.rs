use offload::prelude::*;

#[offload_kernel]
fn k(a: f32) {
    let b = a;
    b = 2.0;
}

fn main() {}
