use offload::prelude::*;

const OUTSIDE: [f32; 2] = [1.0, 2.0];

#[offload_kernel]
fn outside(mut y: Region<f32, Linear1D>) {
    if let Some(v) = y.get_mut() {
        *v = OUTSIDE[1];
    }
}

#[offload_kernel]
fn past_the_end(mut y: Region<f32, Linear1D>) {
    let w = [0.5f32, 0.5];
    if let Some(v) = y.get_mut() {
        *v = w[2];
    }
}

fn main() {}
