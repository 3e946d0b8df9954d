//! Jacobi iterations for Laplace's equation on a square plate (as `examples/jacobi.rs`),
//! with the plate's rows split across the ranks of an MPI program: each rank keeps its
//! rows and one halo row above and below in device buffers, updates its interior with an
//! `offload` kernel over `interior(1)`, exchanges halo rows with its neighbours after
//! every sweep (`exchange_device`), and all-reduces the sweep's squared change
//! (`all_reduce_device`). Rank 0 gathers the plate and checks it against the whole
//! plate swept in one process: the same values for any number of ranks.
//!
//! `mpirun -np 4 target/release/examples/mpi_jacobi [N] [SWEEPS]` (built with
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
    if let Some(v) = next.get_mut() {
        let new = 0.25 * sum;
        let old = grid.get_clamped(0, 0);
        change.fetch_add(0, (new - old) * (new - old));
        *v = new;
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
    let mut args = std::env::args().skip(1).map(|s| s.parse::<usize>().ok());
    let n = args.next().flatten().unwrap_or(256);
    let sweeps = args.next().flatten().unwrap_or(100);
    assert!(n >= ranks + 2, "the plate needs a row per rank");
    // One GPU per rank where the host has several.
    let device = offload::mpi::rank_device(&world)?;

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
    let start = std::time::Instant::now();
    for _ in 0..sweeps {
        change.copy_from_slice(&[0.0])?;
        try_offload! {
            kernel = sweep,
            args = (
                Region::on_device_2d(&mut b, n).interior(1),
                Region::stencil_on_device(&a, n).interior(1),
                &mut change
            )
        }?;
        // Halo rows: my first row up and the row below mine in; then my last row down
        // and the row above mine in. An edge rank only sends or only receives.
        let (top, bottom) = (n..2 * n, rows * n..(rows + 1) * n);
        let (above, below) = (0..n, (rows + 1) * n..(rows + 2) * n);
        if ranks > 1 {
            let (up, down) = (rank as i32 - 1, rank as i32 + 1);
            let last = rank + 1 == ranks;
            match (rank == 0, last) {
                (true, _) => world.receive_device(down, tag, b.slice_mut(below.clone())?)?,
                (_, true) => world.send_device(up, tag, b.slice(top.clone())?)?,
                _ => {
                    let row = b.slice(top.clone())?.to_vec()?;
                    let row = DeviceBuffer::from_slice(&device, &row)?;
                    world.exchange_device(&row, up, b.slice_mut(below.clone())?, down, tag)?
                }
            }
            match (rank == 0, last) {
                (_, true) => world.receive_device(up, tag, b.slice_mut(above.clone())?)?,
                (true, _) => world.send_device(down, tag, b.slice(bottom.clone())?)?,
                _ => {
                    let row = b.slice(bottom.clone())?.to_vec()?;
                    let row = DeviceBuffer::from_slice(&device, &row)?;
                    world.exchange_device(&row, down, b.slice_mut(above.clone())?, up, tag)?
                }
            }
        }
        world.all_reduce_device(&mut change, SystemOperation::sum())?;
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
                "ok: {sweeps} sweeps of a {n}x{n} plate on {ranks} ranks ({device}) match one process; last squared change {total:.6e}; {:.1} us per sweep on rank 0",
                seconds * 1e6 / sweeps as f64
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
