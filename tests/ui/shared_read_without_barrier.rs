use offload::prelude::*;

#[offload_kernel]
fn shift(mut out: Region<f32, Linear1D>, x: &[f32]) {
    let mut tile = Shared::<f32, 256>::new();
    let i = out.index();
    tile.write(x[i]);
    let next = tile[(thread_idx(0) + 1) % 256];
    if let Some(v) = out.get_mut() {
        *v = next;
    }
}

fn main() {}
