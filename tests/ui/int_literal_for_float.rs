use offload::prelude::*;

#[offload_kernel]
fn k(mut y: Region<f32, Linear1D>) {
    if let Some(v) = y.get_mut() {
        *v = 1;
    }
}

fn main() {}
