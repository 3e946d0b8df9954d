use offload::prelude::*;

// Threads below 5 write their slots while the others read slot 0: no path runs both,
// yet thread 0's write and thread 7's read of slot 0 can happen at once.
#[offload_kernel]
fn branches(mut out: Region<f32, Linear1D>, x: &[f32]) {
    let mut tile = Shared::<f32, 256>::new();
    let t = thread_rank();
    let mut v = 0.0;
    if t < 5 {
        tile.write(x[0]);
    } else {
        v = tile[0];
    }
    if let Some(o) = out.get_mut() {
        *o = v;
    }
}

fn main() {}
