use offload::prelude::*;

#[offload_kernel]
fn k(a: f32) -> f32 {
    a
}

fn main() {}
