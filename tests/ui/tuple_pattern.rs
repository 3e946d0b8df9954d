use offload::prelude::*;

#[offload_kernel]
fn k(mut y: Region<f32, Linear1D>) {
    let (a, b) = (1, 2);
}

fn main() {}
