use offload::prelude::*;

#[offload_kernel]
fn k(x: &mut [f32]) {
    let a = 1;
}

fn main() {}
