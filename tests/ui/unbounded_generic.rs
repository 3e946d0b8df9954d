use offload::prelude::*;

#[offload_kernel]
fn k<T: Copy>(mut y: Region<T, Linear1D>) {}

fn main() {}
