// The saxpy of DESIGN.md, the reference kernel for stage snapshots.
use offload::prelude::*;

#[offload_kernel]
fn saxpy(mut y: Region<f32, Linear1D>, x: &[f32], a: f32) {
    let i = y.index();
    if let Some(v) = y.get_mut() {
        *v = a * x[i] + *v;
    }
}
