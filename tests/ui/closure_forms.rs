use offload::prelude::*;

// A `move` closure captures copies, which inlining it where it is called would not make.
#[offload_kernel]
fn counted(mut out: Region<u32, Linear1D>) {
    let mut calls = 0u32;
    let mut count = move || {
        calls += 1;
        calls
    };
    let first = count();
    if let Some(v) = out.get_mut() {
        *v = first + calls;
    }
}

// A `return` in a closure would return from the kernel once the closure is inlined.
#[offload_kernel]
fn early(mut out: Region<f32, Linear1D>, x: &[f32]) {
    let i = out.index();
    let positive = |v: f32| {
        if v < 0.0 {
            return 0.0;
        }
        v
    };
    if let Some(v) = out.get_mut() {
        *v = positive(x[i]);
    }
}

fn main() {}
