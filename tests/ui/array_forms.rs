use offload::prelude::*;

// A `let` array without `mut` is read-only.
#[offload_kernel]
fn fixed(mut out: Region<f32, Linear1D>) {
    let taps = [1.0f32, 2.0];
    taps[0] = 3.0;
    if let Some(v) = out.get_mut() {
        *v = taps[0];
    }
}

// The thread's own arrays are variables of the thread: a few, not a buffer.
#[offload_kernel]
fn big(mut out: Region<f32, Linear1D>) {
    let mut scratch = [0.0f32; 100];
    scratch[1] = 2.0;
    if let Some(v) = out.get_mut() {
        *v = scratch[1];
    }
}

fn main() {}
