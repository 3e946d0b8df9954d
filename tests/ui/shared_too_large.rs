use offload::prelude::*;

#[offload_kernel]
fn huge(mut out: Region<f64, Linear1D>) {
    let mut tile = Shared::<f64, 4294967295>::new();
    tile.write(1.0);
    if let Some(v) = out.get_mut() {
        *v = 0.0;
    }
}

fn main() {}
