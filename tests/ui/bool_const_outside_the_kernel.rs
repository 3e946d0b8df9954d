use offload::prelude::*;

// Integer and float `const` items of the module are carried into kernels; `bool` ones
// are not.
const SLOW: bool = true;

#[offload_kernel]
fn step(mut y: Region<f32, Linear1D>) {
    if let Some(v) = y.get_mut() {
        if SLOW {
            *v += 1.0;
        }
    }
}

fn main() {}
