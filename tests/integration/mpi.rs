//! MPI on device buffers (`offload::mpi`), on the CPU backend: this binary's
//! `rank_program` run as every rank of `mpirun -np 2` and `-np 4`.

use offload::mpi::{Communicator, DeviceCommunicator, SystemOperation};
use offload::{DeviceBuffer, Error};
use std::process::Command;

/// Runs `rank_program` on `ranks` ranks and checks that every rank finished it.
fn under_mpirun(ranks: usize) {
    let out = Command::new("mpirun")
        .args(["-np", &ranks.to_string(), "--oversubscribe"])
        .arg(std::env::current_exe().expect("the test binary"))
        .args(["--exact", "mpi::rank_program", "--ignored", "--nocapture"])
        .args(["--test-threads", "1"])
        .env("OFFLOAD_DEVICE", "cpu")
        // Open MPI refuses to start as root unless told; CI runs as root.
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .output()
        .expect("mpirun (Open MPI's openmpi-bin, installed by tools/ensure-deps)");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "mpirun -np {ranks} failed:\n{stdout}\n{stderr}"
    );
    for rank in 0..ranks {
        let line = format!("rank {rank} of {ranks}: ok");
        assert!(
            stdout.contains(&line),
            "no `{line}` in:\n{stdout}\n{stderr}"
        );
    }
}

#[test]
fn two_ranks() {
    under_mpirun(2);
}

#[test]
fn four_ranks() {
    under_mpirun(4);
}

/// One rank's part; run only under `mpirun`, by the tests above.
#[test]
#[ignore = "run as each rank of mpirun by two_ranks and four_ranks"]
fn rank_program() {
    let universe = offload::mpi::initialize().expect("MPI initialised once");
    let world = universe.world();
    let (rank, size) = (world.rank(), world.size());
    let device = offload::default_device().unwrap();
    let of = |r: i32, i: usize| (r * 100) as f64 + i as f64;
    let mine: Vec<f64> = (0..8).map(|i| of(rank, i)).collect();
    let (next, previous) = ((rank + 1) % size, (rank + size - 1) % size);

    // A ring: elements 2..6 of my buffer into elements 0..4 of my right neighbour's.
    let from = DeviceBuffer::from_slice(&device, &mine).unwrap();
    let mut into = DeviceBuffer::<f64>::zeros(&device, 8).unwrap();
    world
        .exchange_device(
            from.slice(2..6).unwrap(),
            next,
            into.slice_mut(..4).unwrap(),
            previous,
            1,
        )
        .unwrap();
    let got = into.to_vec().unwrap();
    let want: Vec<f64> = (2..6).map(|i| of(previous, i)).chain([0.0; 4]).collect();
    assert_eq!(got, want, "ring exchange on rank {rank}");

    // An all-reduce of elements 1..4 only.
    let mut data = DeviceBuffer::from_slice(&device, &mine).unwrap();
    world
        .all_reduce_device(data.slice_mut(1..4).unwrap(), SystemOperation::sum())
        .unwrap();
    let got = data.to_vec().unwrap();
    for (i, (g, m)) in got.iter().zip(&mine).enumerate() {
        let want = if (1..4).contains(&i) {
            (0..size).map(|r| of(r, i)).sum()
        } else {
            *m
        };
        assert_eq!(*g, want, "all-reduce element {i} on rank {rank}");
    }
    let mut most = DeviceBuffer::from_slice(&device, &[rank as u32]).unwrap();
    world
        .all_reduce_device(&mut most, SystemOperation::max())
        .unwrap();
    assert_eq!(most.to_vec().unwrap(), [size as u32 - 1]);

    // A broadcast of rank 1's whole buffer.
    let mut data = DeviceBuffer::from_slice(&device, &mine).unwrap();
    world.broadcast_device(1, &mut data).unwrap();
    assert_eq!(
        data.to_vec().unwrap(),
        (0..8).map(|i| of(1, i)).collect::<Vec<_>>()
    );

    // A message of another length than the view: an error, and the buffer as it was.
    if rank == 0 {
        world.send_device(1, 2, from.slice(..3).unwrap()).unwrap();
    } else if rank == 1 {
        let mut keep = DeviceBuffer::from_slice(&device, &mine).unwrap();
        let err = world
            .receive_device(0, 2, keep.slice_mut(..5).unwrap())
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "MPI: rank 0 sent 3 elements with tag 2, into 5 device elements: nothing was written"
        );
        assert_eq!(keep.to_vec().unwrap(), mine);
    }

    // A halo exchange with immediate requests on split views of one buffer: two halo
    // elements on each side of four interior ones; the first two interior ones go to the
    // previous rank's lower halo, the last two to the next rank's upper halo.
    let mut plate = DeviceBuffer::from_slice(&device, &mine).unwrap();
    {
        let (mut above, rest) = plate.split_at_mut(2).unwrap();
        let (inner, mut below) = rest.into_split_at(4).unwrap();
        let requests = vec![
            world
                .immediate_receive_device(previous, 4, &mut above)
                .unwrap(),
            world.immediate_receive_device(next, 5, &mut below).unwrap(),
            world
                .immediate_send_device(previous, 5, inner.slice(..2).unwrap())
                .unwrap(),
            world
                .immediate_send_device(next, 4, inner.slice(2..).unwrap())
                .unwrap(),
        ];
        offload::mpi::wait_all(requests).unwrap();
    }
    let want: Vec<f64> = [of(previous, 4), of(previous, 5)]
        .into_iter()
        .chain((2..6).map(|i| of(rank, i)))
        .chain([of(next, 2), of(next, 3)])
        .collect();
    assert_eq!(
        plate.to_vec().unwrap(),
        want,
        "halo exchange on rank {rank}"
    );

    // An immediate receive of a shorter message is an error from `wait`; a dropped one
    // completes and writes nothing.
    if rank == 0 {
        world.send_device(1, 6, from.slice(..3).unwrap()).unwrap();
        world.send_device(1, 8, from.slice(..2).unwrap()).unwrap();
    } else if rank == 1 {
        let mut keep = DeviceBuffer::from_slice(&device, &mine).unwrap();
        let request = world
            .immediate_receive_device(0, 6, keep.slice_mut(..5).unwrap())
            .unwrap();
        assert_eq!(
            request.wait().unwrap_err().to_string(),
            "MPI: rank 0 sent 3 elements with tag 6, into 5 device elements: nothing was written"
        );
        drop(world.immediate_receive_device(0, 8, keep.slice_mut(6..).unwrap()));
        assert_eq!(keep.to_vec().unwrap(), mine);
    }

    // NCCL needs an NVIDIA GPU: on the CPU every rank gets the error, none waits.
    let err = offload::mpi::nccl_communicator(&world, &device).unwrap_err();
    assert!(matches!(err, Error::Nccl(_)), "{err}");

    // A rank outside the communicator.
    let err = world.send_device(size, 3, &from).unwrap_err();
    assert!(matches!(err, Error::Mpi(_)));
    assert_eq!(
        err.to_string(),
        format!("MPI: cannot send to rank {size}: the communicator has ranks 0..{size}")
    );
    println!("rank {rank} of {size}: ok");
}
