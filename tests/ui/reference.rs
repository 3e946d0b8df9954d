use offload::prelude::*;

#[offload_kernel]
fn k(a: f32) {
    let r = &a;
}


// A sub-slice is read-only, as its slice is.
#[offload_kernel]
fn sub_slice_written(x: &[f32], mut y: Region<f32, Linear1D>) {
    let i = y.index();
    if let Some(v) = y.get_mut() {
        let part = &x[i..i + 2];
        part[0] = 1.0;
        *v = part[1];
    }
}

#[offload_device]
fn twice(v: f32) -> f32 {
    v * 2.0
}

// A sub-slice passed on, or used as a value: the messages say what a sub-slice takes.
#[offload_kernel]
fn sub_slice_passed(x: &[f32], mut y: Region<f32, Linear1D>) {
    let i = y.index();
    if let Some(v) = y.get_mut() {
        *v = twice(&x[i..]);
    }
}

#[offload_kernel]
fn sub_slice_as_value(x: &[f32], mut y: Region<f32, Linear1D>) {
    let i = y.index();
    if let Some(v) = y.get_mut() {
        let part = &x[i..];
        let same = part;
        *v = same[0];
    }
}

fn main() {}
