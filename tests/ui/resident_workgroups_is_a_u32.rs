use offload::prelude::*;

#[offload_kernel]
fn fill(mut y: Region<f32, Linear1D>) {
    if let Some(v) = y.get_mut() {
        *v = 1.0;
    }
}

// `resident_workgroups` takes a `u32`: how many workgroups a multiprocessor should hold.
fn main() {
    let mut y = vec![0f32; 8];
    offload! { kernel = fill, args = (&mut y), resident_workgroups = "eight" };
}
