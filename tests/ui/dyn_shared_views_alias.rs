use offload::prelude::*;

// Two `DynShared` views are the same memory: this read races with the write.
#[offload_kernel]
fn alias(mut out: Region<f32, Linear1D>) {
    let mut a = DynShared::<f32>::new();
    let b = DynShared::<f32>::new();
    let t = thread_idx(0);
    a.write(t as f32 + 1.0);
    let seen = b[(t + 1) % b.len()];
    if let Some(v) = out.get_mut() {
        *v = seen;
    }
}

fn main() {}
