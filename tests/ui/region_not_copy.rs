use offload::prelude::*;

#[offload_kernel]
fn fill(mut y: Region<f32, Linear1D>) {
    if let Some(v) = y.get_mut() {
        *v = 1.0;
    }
}

fn main() {
    let mut data = vec![0.0f32; 4];
    let region: Region<f32, Linear1D> = Region::new(&mut data);
    let copy = region;
    offload! { kernel = fill, args = (region) };
    drop(copy);
}
