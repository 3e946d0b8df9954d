use offload::prelude::*;

#[offload_kernel]
fn flags(mut out: Region<f32, Linear1D>) {
    let mut seen = Shared::<bool, 64>::new();
    if let Some(o) = out.get_mut() {
        *o = 1.0;
    }
}

fn main() {}
