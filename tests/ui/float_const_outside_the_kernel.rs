use offload::prelude::*;

// Integer `const` items of the module are carried into kernels; float ones are not yet.
const DT: f32 = 0.01;

#[offload_kernel]
fn step(mut y: Region<f32, Linear1D>) {
    if let Some(v) = y.get_mut() {
        *v += DT;
    }
}

fn main() {}
