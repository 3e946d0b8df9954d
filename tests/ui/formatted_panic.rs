use offload::prelude::*;

#[offload_kernel]
fn k(mut y: Region<f32, Linear1D>) {
    let i = y.index();
    panic!("bad index {}", i);
}

fn main() {}
