use offload::prelude::*;

#[offload_kernel]
fn k(a: f32) {
    fn helper() {}
}

fn main() {}
