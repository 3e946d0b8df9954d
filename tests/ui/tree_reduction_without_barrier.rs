use offload::prelude::*;

// Without a barrier in the loop, a fast thread's next step (a smaller `s`) overlaps a
// slow thread's current one.
#[offload_kernel]
fn sums(out: Atomic<f32>, x: &[f32]) {
    let mut tile = Shared::<f32, 256>::new();
    let t = thread_rank();
    tile.write(x[t]);
    sync_threads();
    let mut s = 128;
    while s > 0 {
        if t < s {
            tile[t] += tile[t + s];
        }
        s /= 2;
    }
    sync_threads();
    if t == 0 {
        out.fetch_add(0, tile[0]);
    }
}

fn main() {}
