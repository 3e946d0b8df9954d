use offload::prelude::*;

struct Gain;

impl Gain {
    fn apply(x: f32) -> f32 {
        x * 2.0
    }
}

#[offload_kernel]
fn unsupported_method(mut y: Region<f32, Linear1D>, x: &[u32]) {
    let i = y.index();
    if let Some(v) = y.get_mut() {
        *v = f32::hypot(x[i] as f32, 1.0);
    }
}

#[offload_kernel]
fn not_a_scalar_type(mut y: Region<f32, Linear1D>) {
    if let Some(v) = y.get_mut() {
        *v = Gain::apply(*v);
    }
}

fn main() {}
