use offload::prelude::*;

// The saturating methods are integer methods; floats saturate to infinity by themselves.
#[offload_kernel]
fn clamped(mut out: Region<f32, Linear1D>, x: &[f32]) {
    let i = out.index();
    if let Some(v) = out.get_mut() {
        *v = x[i].saturating_mul(2.0);
    }
}

fn main() {}
