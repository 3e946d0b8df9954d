use offload::prelude::*;

#[offload_kernel]
fn k(mut y: Region<f32, Linear1D>) {
    y[0] = 1.0;
}

fn main() {}
