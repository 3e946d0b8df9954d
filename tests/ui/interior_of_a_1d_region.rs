use offload::prelude::*;

// Only 2-D and 3-D regions have an interior.
fn main() {
    let mut y = vec![0f32; 16];
    let _ = Region::<f32, Linear1D>::new(&mut y).interior(1);
}
