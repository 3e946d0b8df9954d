//! `offload-bench nccl [MiB]`: NCCL collectives on device buffers over every GPU of the
//! machine, checked against the host, and the all-reduce's bandwidth.
//!
//! - A [`Clique`] of all GPUs: all-reduce (sum and max) and broadcast of `f32`/`f64`/
//!   `i32` buffers, each device's result compared with the host's.
//! - One [`Communicator`] per GPU made from one [`UniqueId`] on helper threads (as ranks
//!   of an MPI program would, one process each): all-gather, reduce-scatter, and the
//!   error when the ranks pass different lengths.
//! - The all-reduce of `MiB` of `f32` per device through the clique, median of 20 after
//!   warm-ups: algorithm bandwidth (bytes / time) and bus bandwidth (algorithm bandwidth
//!   times 2(n-1)/n), as `nccl-tests` reports them.

use anyhow::{Result, bail};
use offload::nccl::{Clique, Communicator, ReduceOp, UniqueId};
use offload::{Device, DeviceBuffer};
use std::time::Instant;

pub fn run(mut args: impl Iterator<Item = String>) -> Result<()> {
    let mib: usize = args.next().map(|s| s.parse()).transpose()?.unwrap_or(256);
    let gpus: Vec<Device> = offload::devices()
        .into_iter()
        .filter(|d| matches!(d, Device::Cuda { .. }))
        .collect();
    if gpus.is_empty() {
        bail!("no NVIDIA GPU");
    }
    let n = gpus.len();
    println!(
        "nccl: {n} GPU(s): {}",
        gpus.iter()
            .map(|d| d.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    );
    let mut clique = Clique::new(&gpus)?;

    // All-reduce and broadcast over the clique.
    let len = 1000;
    let value = |d: usize, i: usize| ((d + 1) * 1000 + i % 97) as f32;
    let mut bufs = gpus
        .iter()
        .enumerate()
        .map(|(d, g)| {
            DeviceBuffer::from_slice(g, &(0..len).map(|i| value(d, i)).collect::<Vec<_>>())
        })
        .collect::<Result<Vec<_>, _>>()?;
    clique.all_reduce(&mut bufs, ReduceOp::Sum)?;
    let want: Vec<f32> = (0..len)
        .map(|i| (0..n).map(|d| value(d, i)).sum())
        .collect();
    for (d, b) in bufs.iter().enumerate() {
        if b.to_vec()? != want {
            bail!("all-reduce sum differs from the host on device {d}");
        }
    }
    let mut ints = gpus
        .iter()
        .enumerate()
        .map(|(d, g)| DeviceBuffer::from_slice(g, &[d as i32 * 7 - 3, -(d as i32)]))
        .collect::<Result<Vec<_>, _>>()?;
    clique.all_reduce(&mut ints, ReduceOp::Max)?;
    for b in &ints {
        if b.to_vec()? != [(n as i32 - 1) * 7 - 3, 0] {
            bail!("all-reduce max differs from the host");
        }
    }
    let mut doubles = gpus
        .iter()
        .enumerate()
        .map(|(d, g)| DeviceBuffer::from_slice(g, &[d as f64 + 0.5; 5]))
        .collect::<Result<Vec<_>, _>>()?;
    let root = n - 1;
    clique.broadcast(root, &mut doubles)?;
    for b in &doubles {
        if b.to_vec()? != [root as f64 + 0.5; 5] {
            bail!("broadcast differs from the root's data");
        }
    }
    let mut wrong = vec![DeviceBuffer::<f32>::zeros(&gpus[0], 3)?];
    match clique.all_reduce(&mut wrong, ReduceOp::Sum) {
        Err(e) if n > 1 => println!("nccl: too few buffers: {e}"),
        Ok(()) if n == 1 => {}
        other => bail!("a clique given one buffer for {n} devices: {other:?}"),
    }
    println!("nccl: clique all-reduce (sum, max) and broadcast match the host");

    // One communicator per GPU, each on its own thread, as ranks would be.
    let id = UniqueId::new()?;
    let id = UniqueId::from_bytes(id.to_bytes());
    let results = std::thread::scope(|s| {
        let handles: Vec<_> = gpus
            .iter()
            .enumerate()
            .map(|(rank, gpu)| s.spawn(move || rank_part(gpu, &id, rank, n)))
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("rank thread"))
            .collect::<Vec<_>>()
    });
    for r in results {
        r?;
    }
    println!("nccl: ranks' all-gather, reduce-scatter and length check match the host");

    // Bandwidth of the clique's all-reduce.
    let elems = mib * (1 << 20) / 4;
    let mut big = gpus
        .iter()
        .map(|g| DeviceBuffer::<f32>::zeros(g, elems))
        .collect::<Result<Vec<_>, _>>()?;
    let mut times = Vec::new();
    for rep in 0..25 {
        offload::synchronize()?;
        let start = Instant::now();
        clique.all_reduce(&mut big, ReduceOp::Sum)?;
        for b in &big {
            b.slice(..1)?.to_vec()?;
        }
        if rep >= 5 {
            times.push(start.elapsed().as_secs_f64());
        }
    }
    times.sort_by(f64::total_cmp);
    let t = times[times.len() / 2];
    let alg = (elems * 4) as f64 / t / 1e9;
    let bus = alg * 2.0 * (n as f64 - 1.0) / n as f64;
    println!(
        "nccl: all-reduce of {mib} MiB f32 on {n} GPU(s): {:.1} us, algorithm bandwidth {alg:.1} GB/s, bus bandwidth {bus:.1} GB/s",
        t * 1e6
    );
    Ok(())
}

/// Rank `rank` of `ranks`: its communicator, an all-gather, a reduce-scatter, and a
/// collective whose lengths differ between ranks (when there are several).
fn rank_part(gpu: &Device, id: &UniqueId, rank: usize, ranks: usize) -> Result<()> {
    let mut comm = Communicator::new(gpu, id, rank, ranks)?;
    let mine: Vec<f64> = (0..4).map(|i| (rank * 10 + i) as f64).collect();
    let send = DeviceBuffer::from_slice(gpu, &mine)?;
    let mut all = DeviceBuffer::<f64>::zeros(gpu, 4 * ranks)?;
    comm.all_gather(&send, &mut all)?;
    let want: Vec<f64> = (0..ranks)
        .flat_map(|r| (0..4).map(move |i| (r * 10 + i) as f64))
        .collect();
    if all.to_vec()? != want {
        bail!("all-gather differs from the host on rank {rank}");
    }
    let whole: Vec<f32> = (0..2 * ranks).map(|i| (i + rank) as f32).collect();
    let send = DeviceBuffer::from_slice(gpu, &whole)?;
    let mut part = DeviceBuffer::<f32>::zeros(gpu, 2)?;
    comm.reduce_scatter(&send, &mut part, ReduceOp::Sum)?;
    let want: Vec<f32> = (0..2)
        .map(|i| (0..ranks).map(|r| (rank * 2 + i + r) as f32).sum())
        .collect();
    if part.to_vec()? != want {
        bail!("reduce-scatter differs from the host on rank {rank}");
    }
    if ranks > 1 {
        let mut odd = DeviceBuffer::<f32>::zeros(gpu, 3 + rank)?;
        match comm.all_reduce(&mut odd, ReduceOp::Sum) {
            Err(e) if rank == 0 => println!("nccl: different lengths: {e}"),
            Err(_) => {}
            Ok(()) => bail!("rank {rank}: an all-reduce of different lengths ran"),
        }
    }
    Ok(())
}
