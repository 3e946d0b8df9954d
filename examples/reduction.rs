//! A sum of many floats in two levels: subgroup (warp) sums, then shared memory and a
//! barrier to sum the subgroups of each workgroup, then one atomic add per workgroup.
//! Checked against a host sum. `cargo run --release --example reduction [N]`.

use offload::prelude::*;

#[offload_kernel]
fn sum(total: Atomic<f64>, x: &[f64]) {
    let mut partial = Shared::<f64, 256>::new();
    let i = workgroup_idx(0) * workgroup_dim(0) + thread_idx(0);
    let v = if i < x.len() { x[i] } else { 0.0 };
    // Every thread leaves its subgroup's sum in its own slot...
    partial.write(subgroup_sum(v));
    sync_threads();
    // ...and after the barrier each subgroup adds up the first slot of every subgroup.
    let width = subgroup_size();
    let lane = subgroup_lane();
    let mine = if lane * width < workgroup_dim(0) {
        partial[lane * width]
    } else {
        0.0
    };
    let mut block = subgroup_sum(mine);
    // Subgroups narrower than the count of subgroups (one lane on the CPU) leave some
    // slots to add here.
    let mut k = width * width;
    while k < workgroup_dim(0) {
        block += partial[k];
        k += width;
    }
    if thread_idx(0) == 0 {
        total.fetch_add(0, block);
    }
}

fn main() -> Result<(), Error> {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(1 << 22);
    let device = offload::default_device()?;
    println!("device: {device}");
    let x: Vec<f64> = (0..n as u64)
        .map(|i| ((i * 7919) % 10007) as f64 * 0.01 - 50.0)
        .collect();
    let mut total = vec![0.0f64];
    // No region sizes this launch: one workgroup of 256 threads per 256 values.
    let groups = n.div_ceil(256) as u32;
    try_offload! {
        kernel = sum,
        args = (&mut total, &x),
        workgroup_dim = [groups, 1, 1],
        thread_dim = [256, 1, 1]
    }?;
    let want: f64 = x.iter().sum();
    let scale: f64 = x.iter().map(|v| v.abs()).sum();
    if (total[0] - want).abs() <= 1e-12 * scale {
        println!(
            "ok: the sum of {n} values is {:.6} (host: {want:.6})",
            total[0]
        );
        Ok(())
    } else {
        eprintln!(
            "FAILED: the sum of {n} values is {} but the host says {want}",
            total[0]
        );
        std::process::exit(1);
    }
}
