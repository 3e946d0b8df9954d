use offload::prelude::*;

// A `Linear3D` region's coordinates are `x()`, `y()` and `z()`.
#[offload_kernel]
fn k(mut y: Region<f32, Linear3D>) {
    let r = y.row();
    if let Some(v) = y.get_mut() {
        *v = r as f32;
    }
}

fn main() {}
