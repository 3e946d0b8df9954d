use offload::prelude::*;

#[offload_kernel]
fn k(a: f32) {
    let p = std::ops::Range { start: 0, end: 1 };
}

fn main() {}
