use offload::prelude::*;

// Tuples bind flat: `let (a, b) = (x, y);`. A nested pattern is refused.
#[offload_kernel]
fn k(mut y: Region<f32, Linear1D>) {
    let (a, (b, c)) = (1, (2, 3));
}

fn main() {}
