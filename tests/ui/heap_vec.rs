use offload::prelude::*;

#[offload_kernel]
fn k(mut y: Region<f32, Linear1D>) {
    let v = Vec::<f32>::new();
}

fn main() {}
