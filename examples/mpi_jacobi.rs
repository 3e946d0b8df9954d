//! Jacobi iterations for Laplace's equation on a square plate (as `examples/jacobi.rs`),
//! with the plate's rows split across the ranks of an MPI program: each rank keeps its
//! rows and one halo row above and below in device buffers, updates its interior with an
//! `offload` kernel over `interior(1)`, exchanges halo rows with its neighbours after
//! every sweep (immediate sends and receives on views split off the buffer with
//! `split_at_mut`), and all-reduces the sweep's squared change (`all_reduce_device`).
//! Rank 0 gathers the plate and checks it against the whole plate swept in one process:
//! the same values for any number of ranks. With `nccl` after the sizes, the squared
//! change is all-reduced by NCCL on the GPUs instead, through a communicator whose unique
//! id went over MPI (`offload::mpi::nccl_communicator`).
//!
//! `mpirun -np 4 target/release/examples/mpi_jacobi [N] [SWEEPS] [nccl]` (built with
//! `cargo build --release -p offload --example mpi_jacobi --features mpi`).

use offload::mpi::{Communicator, DeviceCommunicator, SystemOperation};
use offload::prelude::*;

#[offload_kernel]
fn sweep(mut next: Region<f64, Linear2D>, grid: Region<f64, Stencil2D<1>>, change: Atomic<f64>) {
    let sum = grid.get_clamped(-1, 0)
        + grid.get_clamped(1, 0)
        + grid.get_clamped(0, -1)
        + grid.get_clamped(0, 1);
    // Threads past the region's end (a workgroup's padding) write nothing and add
    // nothing.
    let mut squared = 0.0;
    if let Some(v) = next.get_mut() {
        let new = 0.25 * sum;
        let old = grid.get_clamped(0, 0);
        squared = (new - old) * (new - old);
        *v = new;
    }
    // One atomic add per workgroup, not per element: adds to one address serialise.
    let block = workgroup_sum(squared);
    if thread_idx(0) == 0 && thread_idx(1) == 0 {
        change.fetch_add(0, block);
    }
}

/// The plate before the first sweep: a hot top edge, a cold bottom one, a gradient down
/// the sides.
fn plate(n: usize) -> Vec<f64> {
    let mut a = vec![0.0f64; n * n];
    for r in 0..n {
        let t = 100.0 * (1.0 - r as f64 / (n - 1) as f64);
        a[r * n] = t;
        a[r * n + n - 1] = t;
    }
    a[..n].fill(100.0);
    a
}

/// `sweeps` sweeps of the whole plate on the host; the last sweep's squared change.
fn host_solve(a: &mut Vec<f64>, n: usize, sweeps: usize) -> f64 {
    let mut b = a.clone();
    let mut change = 0.0;
    for _ in 0..sweeps {
        change = 0.0;
        for r in 1..n - 1 {
            for c in 1..n - 1 {
                let i = r * n + c;
                b[i] = 0.25 * (a[i - n] + a[i + n] + a[i - 1] + a[i + 1]);
                change += (b[i] - a[i]) * (b[i] - a[i]);
            }
        }
        std::mem::swap(a, &mut b);
    }
    change
}

/// The interior rows `first..end` of an `n`-row plate that `rank` of `ranks` updates.
fn rows_of(rank: usize, ranks: usize, n: usize) -> (usize, usize) {
    let inner = n - 2;
    let share = |r: usize| 1 + r * inner / ranks;
    (share(rank), share(rank + 1))
}

pub fn main() -> Result<(), Error> {
    let universe = offload::mpi::initialize().expect("MPI is initialised once");
    let world = universe.world();
    let (rank, ranks) = (world.rank() as usize, world.size() as usize);
    let args: Vec<String> = std::env::args().skip(1).collect();
    let number = |k: usize, default| args.get(k).and_then(|s| s.parse().ok()).unwrap_or(default);
    let (n, sweeps) = (number(0, 256), number(1, 100));
    let nccl = args.get(2).is_some_and(|a| a == "nccl");
    assert!(n >= ranks + 2, "the plate needs a row per rank");
    // One GPU per rank where the host has several.
    let device = offload::mpi::rank_device(&world)?;
    let mut gpus = match nccl {
        true => Some(offload::mpi::nccl_communicator(&world, &device)?),
        false => None,
    };

    // This rank's rows with a halo row on each side: global rows `first - 1..end + 1`.
    let (first, end) = rows_of(rank, ranks, n);
    let rows = end - first;
    let whole = plate(n);
    let mine = &whole[(first - 1) * n..(end + 1) * n];
    let mut a = DeviceBuffer::from_slice(&device, mine)?;
    let mut b = DeviceBuffer::from_slice(&device, mine)?;
    let mut change = DeviceBuffer::<f64>::zeros(&device, 1)?;
    let tag = 7;
    let mut total = 0.0;
    // Timed from the end of the first sweep, which compiles the kernel.
    let mut start = std::time::Instant::now();
    for done in 0..sweeps {
        if done == 1 {
            start = std::time::Instant::now();
        }
        change.copy_from_slice(&[0.0])?;
        try_offload! {
            kernel = sweep,
            args = (
                Region::on_device_2d(&mut b, n).interior(1),
                Region::stencil_on_device(&a, n).interior(1),
                &mut change
            )
        }?;
        // Halo rows: my first row goes up and the row above mine comes in; my last row
        // goes down and the row below mine comes in. The halo rows and my rows are
        // views split off `b`, so the receives write while the sends read.
        {
            let (mut above, rest) = b.split_at_mut(n)?;
            let (mine, mut below) = rest.into_split_at(rows * n)?;
            let (up, down) = (rank as i32 - 1, rank as i32 + 1);
            let mut requests = Vec::new();
            if rank > 0 {
                requests.push(world.immediate_receive_device(up, tag, &mut above)?);
                requests.push(world.immediate_send_device(up, tag, mine.slice(..n)?)?);
            }
            if rank + 1 < ranks {
                requests.push(world.immediate_receive_device(down, tag, &mut below)?);
                let last = mine.slice((rows - 1) * n..)?;
                requests.push(world.immediate_send_device(down, tag, last)?);
            }
            offload::mpi::wait_all(requests)?;
        }
        match gpus.as_mut() {
            Some(gpus) => gpus.all_reduce(&mut change, offload::nccl::ReduceOp::Sum)?,
            None => world.all_reduce_device(&mut change, SystemOperation::sum())?,
        }
        total = change.to_vec()?[0];
        std::mem::swap(&mut a, &mut b);
    }

    let seconds = start.elapsed().as_secs_f64();
    // Rank 0 gathers every rank's rows into the whole plate.
    if rank == 0 {
        let mut plate_on_device = DeviceBuffer::from_slice(&device, &whole)?;
        plate_on_device
            .slice_mut(first * n..end * n)?
            .copy_from_slice(&a.slice(n..(rows + 1) * n)?.to_vec()?)?;
        for from in 1..ranks {
            let (f, e) = rows_of(from, ranks, n);
            world.receive_device(from as i32, tag, plate_on_device.slice_mut(f * n..e * n)?)?;
        }
        let got = plate_on_device.to_vec()?;
        let mut want = whole.clone();
        let want_change = host_solve(&mut want, n, sweeps);
        let worst = got
            .iter()
            .zip(&want)
            .map(|(g, w)| (g - w).abs())
            .fold(0.0, f64::max);
        let change_off = (total - want_change).abs() / want_change.max(f64::MIN_POSITIVE);
        if worst == 0.0 && change_off < 1e-9 {
            println!(
                "ok: {sweeps} sweeps of a {n}x{n} plate on {ranks} ranks ({device}{}) match one process; last squared change {total:.6e}; {:.1} us per sweep on rank 0 after the first",
                if nccl { ", NCCL all-reduce" } else { "" },
                seconds * 1e6 / sweeps.saturating_sub(1).max(1) as f64
            );
            Ok(())
        } else {
            eprintln!(
                "FAILED: {ranks} ranks differ from one process by up to {worst:e}; squared change {total:e} against {want_change:e}"
            );
            std::process::exit(1);
        }
    } else {
        world.send_device(0, tag, a.slice(n..(rows + 1) * n)?)
    }
}
