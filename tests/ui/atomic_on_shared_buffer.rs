use offload::prelude::*;

#[offload_kernel]
fn count(hits: Atomic<u32>, x: &[f64]) {
    let i = workgroup_idx(0) * workgroup_dim(0) + thread_idx(0);
    if i < x.len() {
        hits.fetch_add(0, 1);
    }
}

fn main() {
    let device = offload::default_device().unwrap();
    let hits = offload::DeviceBuffer::from_slice(&device, &[0u32]).unwrap();
    let x = vec![1.0f64; 4];
    offload! { kernel = count, args = (&hits, &x) };
}
