use offload::prelude::*;

// A labelled block and a method's type arguments: each refusal says what to write instead.
#[offload_kernel]
fn early(mut y: Region<f32, Linear1D>, x: &[f32]) {
    let i = y.index();
    let v = 'found: {
        if x[i] > 0.0 {
            break 'found x[i];
        }
        0.0
    };
    if let Some(o) = y.get_mut() {
        *o = v;
    }
}

#[offload_kernel]
fn typed(mut y: Region<f32, Linear1D>, x: &[u32]) {
    let i = y.index();
    let w = x[i].pow::<>(2);
    if let Some(o) = y.get_mut() {
        *o = w as f32;
    }
}

fn main() {}
