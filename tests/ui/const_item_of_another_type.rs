use offload::prelude::*;

// A `const` item outside the kernel is typed by its use, as a literal is; where the use
// leaves the type open, as a literal it is an `i32`, and a value that does not fit is a
// compile error, never a wrapped value.
const BIG: i64 = 5_000_000_000;

#[offload_kernel]
fn halve(mut y: Region<f32, Linear1D>) {
    let n = BIG;
    if let Some(v) = y.get_mut() {
        *v = (n / 2) as f32;
    }
}

fn main() {}
