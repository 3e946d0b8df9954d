use offload::prelude::*;

#[offload_kernel]
fn half(mut out: Region<f32, Linear1D>) {
    if thread_idx(0) < 128 {
        sync_threads();
    }
    if let Some(o) = out.get_mut() {
        *o = 1.0;
    }
}

fn main() {}
