use offload::prelude::*;

#[offload_kernel]
fn scatter(mut out: Region<f32, Linear1D>) {
    let mut tile = Shared::<f32, 64>::new();
    tile[3] = 1.0;
    if let Some(o) = out.get_mut() {
        *o = 1.0;
    }
}

fn main() {}
