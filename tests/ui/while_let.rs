use offload::prelude::*;

#[offload_kernel]
fn k(mut y: Region<f32, Linear1D>) {
    while let Some(v) = y.get_mut() {
        *v = 1.0;
    }
}

fn main() {}
