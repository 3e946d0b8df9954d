use offload::prelude::*;

#[offload_kernel]
fn k(mut y: Region<f32, Linear1D>) {
    let f = |a: f32| a;
}

fn main() {}
