use offload::prelude::*;

#[offload_kernel(fast)]
fn k(a: f32) {}

fn main() {}
