use offload::prelude::*;

#[offload_kernel]
unsafe fn k(a: f32) {}

fn main() {}
