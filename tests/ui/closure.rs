use offload::prelude::*;

// A closure is called where it is bound; it is not a value to pass on.
#[offload_kernel]
fn k(mut y: Region<f32, Linear1D>) {
    let f = |a: f32| a;
    let g = f;
    if let Some(v) = y.get_mut() {
        *v = g(1.0);
    }
}

fn main() {}
