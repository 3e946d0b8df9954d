use offload::prelude::*;

#[offload_kernel]
fn k(a: f32) {
    let r = &a;
}


// A sub-slice: the message says how to index the part instead.
#[offload_kernel]
fn sub_slice(x: &[f32], mut y: Region<f32, Linear1D>) {
    let i = y.index();
    if let Some(v) = y.get_mut() {
        let part = &x[i..i + 2];
        *v = part[0];
    }
}

fn main() {}
