use offload::prelude::*;

// The thread's own arrays are held element by element, so their length must be known
// where the kernel is translated; an outside `const` item's value is rustc's.
const TAPS: usize = 4;

#[offload_kernel]
fn window(mut y: Region<f32, Linear1D>, x: &[f32]) {
    let mut acc = [0.0f32; TAPS];
    let i = y.index();
    acc[0] = x[i];
    if let Some(v) = y.get_mut() {
        *v = acc[0];
    }
}

fn main() {}
