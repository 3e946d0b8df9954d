use offload::prelude::*;

#[offload_kernel]
fn partial(mut y: Region<f32, Linear1D>) {
    let mut s = 0.0f32;
    if thread_idx(0) < 4 {
        s = workgroup_sum(1.0f32);
    }
    if let Some(v) = y.get_mut() {
        *v = s;
    }
}

#[offload_device]
fn helper(v: f32) -> f32 {
    workgroup_max(v)
}

fn main() {}
