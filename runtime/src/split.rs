//! Launches split across devices (`device = all`): the workgroups are cut into one
//! contiguous share per GPU (two shares run one after the other on the CPU when there is
//! no GPU, which is how CI exercises this path), every share runs on its own device at
//! once, and each writes back only the elements its threads own.
//!
//! Each share works on its own copy of the writable regions, and nothing is written back
//! until every share has finished without a panic, so a failed split launch leaves the
//! caller's data as it was, like any launch. Only one-dimensional launches over host data
//! (`Linear1D` and `Chunked<N>` regions, slices, scalars) can be split: atomics and device
//! buffers would need merging across devices.

use crate::{
    Device, Error,
    launch::{ArgKind, KernelArg, KernelDescriptor, Launch},
};
use offload_mir::{Body, Strategy};

pub(crate) fn run(
    body: &Body,
    descriptor: &'static KernelDescriptor,
    args: &mut [KernelArg<'_>],
    grid: [u32; 3],
    block: [u32; 3],
    dyn_cache: u32,
) -> Result<(), Error> {
    if grid[1..] != [1, 1] || block[1..] != [1, 1] {
        return Err(Error::InvalidLaunch(
            "`device = all` splits one-dimensional launches only".into(),
        ));
    }
    for arg in args.iter() {
        let splittable = match &arg.kind {
            ArgKind::Region {
                strategy, resident, ..
            } => {
                resident.is_none() && matches!(strategy, Strategy::Linear1D | Strategy::Chunked(_))
            }
            ArgKind::Slice { resident, .. } => resident.is_none(),
            ArgKind::Atomic { .. } => false,
            ArgKind::Scalar { .. } => true,
        };
        if !splittable {
            return Err(Error::InvalidLaunch(
                "`device = all` splits launches over host data with `Linear1D` or `Chunked<N>` regions only".into(),
            ));
        }
    }
    let gpus: Vec<Device> = crate::devices()
        .into_iter()
        .filter(|d| matches!(d, Device::Cuda { .. }))
        .collect();
    let devices = if gpus.is_empty() {
        vec![Device::Cpu, Device::Cpu]
    } else {
        gpus
    };
    let parts = devices.len() as u32;
    let groups = grid[0];

    // Per share: copies of the writable arguments, and the arguments pointing at them.
    let mut scratch: Vec<Vec<Vec<u8>>> = Vec::new();
    let mut shares: Vec<Vec<KernelArg<'_>>> = Vec::new();
    for _ in 0..parts {
        let mut copies = Vec::new();
        let mut share_args = Vec::new();
        for arg in args.iter() {
            let mut kind = arg.kind.clone();
            if let (true, Some((data, bytes))) = (kind.copied_back(), kind.bytes()) {
                // SAFETY: `data` is the argument's borrowed slice of `bytes` bytes.
                let mut copy = unsafe { std::slice::from_raw_parts(data, bytes) }.to_vec();
                if let ArgKind::Region { data, .. } = &mut kind {
                    *data = copy.as_mut_ptr();
                }
                copies.push(copy);
            }
            share_args.push(KernelArg::with_kind(kind));
        }
        scratch.push(copies);
        shares.push(share_args);
    }

    let ranges: Vec<(u32, u32)> = (0..parts)
        .map(|p| (groups * p / parts, groups * (p + 1) / parts))
        .collect();
    let results: Vec<Result<(), Error>> = std::thread::scope(|scope| {
        let handles: Vec<_> = shares
            .iter_mut()
            .zip(&devices)
            .zip(&ranges)
            .map(|((share, device), &(start, end))| {
                let share = SendArgs(share);
                scope.spawn(move || {
                    let share = share;
                    if start == end {
                        return Ok(());
                    }
                    let launch = Launch {
                        body,
                        descriptor,
                        args: share.0,
                        grid: [end - start, 1, 1],
                        block,
                        dyn_cache,
                        group_base: start,
                    };
                    match device {
                        Device::Cuda { ordinal, .. } => crate::cuda::run(launch, *ordinal),
                        Device::Cpu => crate::cpu::run(launch),
                    }
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join().unwrap_or_else(|_| {
                    Err(Error::InvalidLaunch("a share's thread panicked".into()))
                })
            })
            .collect()
    });
    // The first share's failure is the launch's.
    for result in results {
        result?;
    }

    // Every share succeeded: copy back the elements each share's threads own.
    let threads_per_group = block[0] as usize;
    let writable: Vec<&KernelArg<'_>> = args.iter().filter(|a| a.kind.copied_back()).collect();
    for (w, arg) in writable.iter().enumerate() {
        let ArgKind::Region {
            data,
            shape,
            elem,
            strategy,
            ..
        } = &arg.kind
        else {
            continue;
        };
        let per_thread = match strategy {
            Strategy::Chunked(n) => *n as usize,
            _ => 1,
        };
        let size = elem.size_bytes();
        for (p, &(start, end)) in ranges.iter().enumerate() {
            let first = (start as usize * threads_per_group * per_thread).min(shape.len);
            let last = (end as usize * threads_per_group * per_thread).min(shape.len);
            let part = &scratch[p][w][first * size..last * size];
            // SAFETY: `data` is the region's exclusively borrowed slice; the range is in it.
            unsafe {
                std::ptr::copy_nonoverlapping(part.as_ptr(), data.add(first * size), part.len())
            };
        }
    }
    Ok(())
}

/// One share's arguments, moved to the thread that runs the share.
struct SendArgs<'s, 'a>(&'s mut [KernelArg<'a>]);

// SAFETY: a share's arguments point at its own copies of the writable data and at the
// caller's read-only data, which every share only reads; the caller's borrows outlive the
// scope the shares run in.
unsafe impl Send for SendArgs<'_, '_> {}
