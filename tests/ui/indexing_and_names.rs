use offload::prelude::*;

// What kernels index and see: each refusal says what they take.
#[offload_kernel]
fn literal_index(mut y: Region<f32, Linear1D>, k: usize) {
    let v = [1.0f32, 2.0][k];
    if let Some(o) = y.get_mut() {
        *o = v;
    }
}

#[offload_kernel]
fn unknown_name(mut y: Region<f32, Linear1D>) {
    if let Some(o) = y.get_mut() {
        *o = gain;
    }
}

fn main() {}
