use offload::prelude::*;

// `Region::new_3d` makes `Linear3D` regions only: a 2-D region has no planes.
fn main() {
    let mut y = vec![0f32; 64];
    let _ = Region::<f32, Linear2D>::new_3d(&mut y, 4, 4);
}
