use offload::prelude::*;

#[offload_kernel]
fn early(mut out: Region<f32, Linear1D>, x: &[f32]) {
    let i = out.index();
    if i >= x.len() {
        return;
    }
    sync_threads();
    if let Some(o) = out.get_mut() {
        *o = x[i];
    }
}

fn main() {}
