use offload::prelude::*;

// `t + s` wraps for `s` near `usize::MAX` (thread 1 would read slot 0 while thread 0
// writes it), and nothing bounds the argument `s`.
#[offload_kernel]
fn fold_once(out: Atomic<f32>, x: &[f32], s: usize) {
    let mut tile = Shared::<f32, 256>::new();
    let t = thread_rank();
    tile.write(x[t]);
    sync_threads();
    if t < s {
        tile[t] += tile[t + s];
    }
    sync_threads();
    if t == 0 {
        out.fetch_add(0, tile[0]);
    }
}

fn main() {}
