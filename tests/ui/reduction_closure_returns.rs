use offload::prelude::*;

// A reduction's closure is inlined into the kernel's loop: a `return` in it would leave
// the kernel, not the closure.
#[offload_kernel]
fn capped(mut out: Region<f32, Linear1D>, x: &[f32]) {
    let s = x.iter().fold(0.0f32, |a, &b| {
        if b > 1.0 {
            return a;
        }
        a + b
    });
    if let Some(o) = out.get_mut() {
        *o = s;
    }
}

fn main() {}
