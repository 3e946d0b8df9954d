use offload::prelude::*;

#[offload_kernel]
fn k(mut y: Region<f32, Spiral>) {
    let a = 1;
}

fn main() {}
