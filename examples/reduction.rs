//! A sum of many floats: `workgroup_sum` adds up each workgroup's values (subgroup sums,
//! shared memory and a barrier underneath), then one atomic add per workgroup into an
//! accumulator that stays on the device. Checked against a host sum.
//! `cargo run --release --example reduction [N]`.

use offload::prelude::*;

#[offload_kernel]
fn sum(total: Atomic<f64>, x: &[f64]) {
    let i = workgroup_idx(0) * workgroup_dim(0) + thread_idx(0);
    let v = if i < x.len() { x[i] } else { 0.0 };
    let block = workgroup_sum(v);
    if thread_idx(0) == 0 {
        total.fetch_add(0, block);
    }
}

pub fn main() -> Result<(), Error> {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(1 << 22);
    let device = offload::default_device()?;
    println!("device: {device}");
    let x: Vec<f64> = (0..n as u64)
        .map(|i| ((i * 7919) % 10007) as f64 * 0.01 - 50.0)
        .collect();
    // The data and the accumulator live on the device: the launch copies nothing.
    let x_on_device = DeviceBuffer::from_slice(&device, &x)?;
    let mut total = DeviceBuffer::<f64>::zeros(&device, 1)?;
    // No region sizes this launch: one workgroup of 256 threads per 256 values.
    let groups = n.div_ceil(256) as u32;
    try_offload! {
        kernel = sum,
        args = (&mut total, &x_on_device),
        workgroup_dim = [groups, 1, 1],
        thread_dim = [256, 1, 1]
    }?;
    let got = total.to_vec()?[0];
    let want: f64 = x.iter().sum();
    let scale: f64 = x.iter().map(|v| v.abs()).sum();
    if (got - want).abs() <= 1e-12 * scale {
        println!("ok: the sum of {n} values is {got:.6} (host: {want:.6})");
        Ok(())
    } else {
        eprintln!("FAILED: the sum of {n} values is {got} but the host says {want}");
        std::process::exit(1);
    }
}
