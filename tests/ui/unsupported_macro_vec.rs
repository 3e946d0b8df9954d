use offload::prelude::*;

#[offload_kernel]
fn k(a: f32) {
    let v = vec![a];
}

fn main() {}
