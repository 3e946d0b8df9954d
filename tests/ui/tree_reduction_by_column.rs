use offload::prelude::*;

// In a 2-D workgroup the threads of one column share `thread_idx(0)`, so two of them
// would add into one slot at once.
#[offload_kernel]
fn sums(out: Atomic<f32>, x: &[f32]) {
    let mut tile = Shared::<f32, 256>::new();
    let t = thread_idx(0);
    tile.write(x[t]);
    sync_threads();
    let mut s = workgroup_dim(0) / 2;
    while s > 0 {
        if t < s {
            tile[t] += tile[t + s];
        }
        sync_threads();
        s /= 2;
    }
    if t == 0 {
        out.fetch_add(0, tile[0]);
    }
}

fn main() {}
