use offload::prelude::*;

#[offload_kernel]
fn flat_index(mut y: Region<f32, Linear1D>) {
    let mut tile = Shared2D::<f32, 4, 8>::new();
    tile.write(1.0);
    sync_threads();
    let v = tile[3];
    if let Some(o) = y.get_mut() {
        *o = v;
    }
}

#[offload_kernel]
fn fill(mut y: Region<f32, Linear1D>) {
    let mut tile = Shared2D::<f32, 4, 8>::new();
    tile.fill(1.0);
    if let Some(o) = y.get_mut() {
        *o = 0.0;
    }
}

fn main() {}
