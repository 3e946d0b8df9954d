use offload::prelude::*;

#[offload_kernel]
fn k(a: f32) {
    let r = &a;
}

fn main() {}
