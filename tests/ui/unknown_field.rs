use offload::prelude::*;

#[offload_kernel]
fn saxpy(mut y: Region<f32, Linear1D>, x: &[f32], a: f32) {
    let i = y.index();
    if let Some(v) = y.get_mut() {
        *v = a * x[i] + *v;
    }
}

fn main() {
    let mut y = vec![1.0f32; 4];
    let x = vec![2.0f32; 4];
    offload! { kernel = saxpy, args = (&mut y, &x, 3.0f32), speed = 3 };
}
