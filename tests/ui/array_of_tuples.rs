use offload::prelude::*;

// Arrays hold scalars: an array of pairs is refused at its type, with the form to write.
#[offload_kernel]
fn weighted(mut y: Region<f32, Linear1D>) {
    const PAIRS: [(f32, f32); 2] = [(1.0, 2.0), (3.0, 4.0)];
    let mut s = 0.0f32;
    for (a, b) in PAIRS.iter() {
        s += a * b;
    }
    if let Some(v) = y.get_mut() {
        *v = s;
    }
}

fn main() {}
