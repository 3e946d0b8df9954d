// A kernel calls only `#[offload_device]` functions: a plain function has no MIR the
// kernel could be linked with, and the call fails to compile where it is made.
use offload::prelude::*;

fn doubled(a: f32) -> f32 {
    a * 2.0
}

#[offload_kernel]
fn uses_a_host_function(mut y: Region<f32, Linear1D>, x: &[f32]) {
    let i = y.index();
    if let Some(v) = y.get_mut() {
        *v = doubled(x[i]);
    }
}

fn main() {}
