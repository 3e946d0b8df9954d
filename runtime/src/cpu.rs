//! The CPU backend: runs the kernel's lowered code (not its Rust body) on every core. The
//! launch's workgroups are split into one contiguous share per host thread; each share
//! runs its workgroups' threads one after another.
//!
//! Region data is copied into a scratch buffer for the kernel and copied back only if no
//! thread panicked, so a failed launch leaves the caller's data untouched, as on a GPU.

use crate::{
    Error,
    launch::Launch,
    panic::{PANIC_BUFFER_WORDS, PanicWords},
};
use std::ffi::c_void;

/// How many host threads run a launch.
pub(crate) fn host_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

#[cfg(not(feature = "jit"))]
pub(crate) fn run(launch: Launch<'_, '_>) -> Result<(), Error> {
    Err(Error::Compile {
        kernel: launch.body.name.clone(),
        message: "the CPU backend needs the `jit` feature".into(),
    })
}

#[cfg(feature = "jit")]
pub(crate) fn run(launch: Launch<'_, '_>) -> Result<(), Error> {
    if launch.grid[2] != 1 || launch.block[2] != 1 {
        return Err(Error::InvalidLaunch(
            "the CPU backend runs one- and two-dimensional launches only".into(),
        ));
    }
    let kernel = crate::compile::cpu(launch.descriptor)?;

    // Scratch copies of writable regions, 8-byte aligned for any element type.
    let mut scratch: Vec<Vec<u64>> = Vec::new();
    let mut words = crate::launch::abi_words(launch.args, |kind, data, bytes| {
        if !kind.copied_back() {
            return Ok(data as u64);
        }
        let mut copy = vec![0u64; bytes.div_ceil(8)];
        // SAFETY: `data` is the argument's borrowed slice of `bytes` bytes.
        unsafe { std::ptr::copy_nonoverlapping(data, copy.as_mut_ptr().cast::<u8>(), bytes) };
        let address = copy.as_mut_ptr() as u64;
        scratch.push(copy);
        Ok(address)
    })?;
    let mut panic: PanicWords = [0; PANIC_BUFFER_WORDS];
    let p = panic.as_mut_ptr() as u64;
    words.extend([p, p, 0, PANIC_BUFFER_WORDS as u64, 1]);

    let groups = launch.grid[0] as u64 * launch.grid[1] as u64;
    let threads = host_threads().min(groups as usize).max(1) as u64;
    let words = &words;
    std::thread::scope(|scope| {
        for t in 0..threads {
            // A split launch's share starts at `group_base` (one-dimensional, so the
            // workgroup's x index is its number: `groups_x` only has to exceed it).
            let base = launch.group_base as u64;
            let (begin, end) = (
                base + groups * t / threads,
                base + groups * (t + 1) / threads,
            );
            let kernel = &kernel;
            let (groups_x, size_x, size_y) = (
                launch.grid[0] as u64 + base,
                launch.block[0] as u64,
                launch.block[1] as u64,
            );
            scope.spawn(move || {
                // The CPU entry point's leading arguments, in `offload_to_cpu`'s order.
                let mut own: Vec<u64> = vec![begin, end, groups_x, size_x, size_y];
                debug_assert_eq!(own.len(), offload_lowering::CPU_LEADING_ARGS);
                own.extend_from_slice(words);
                let mut pointers: Vec<*mut c_void> =
                    own.iter_mut().map(|w| (w as *mut u64).cast()).collect();
                // SAFETY: `pointers` holds one pointer per expanded entry-point argument
                // in the kernel ABI's order; memrefs describe the scratch regions, the
                // borrowed slices and the panic buffer, all alive until the scope ends.
                // Threads of different shares touch disjoint region elements (checked by
                // the strategy's `check_launch`), and the panic buffer is claimed
                // atomically.
                unsafe { kernel.call(&mut pointers) };
            });
        }
    });

    if let Some(error) = crate::panic::decode(launch.descriptor.name, launch.body, &panic) {
        return Err(error);
    }
    let written = launch.args.iter().filter(|a| a.kind.copied_back());
    for (arg, copy) in written.zip(&scratch) {
        let (data, bytes) = arg.kind.bytes().expect("written arguments have data");
        // SAFETY: `data` is the region's exclusively borrowed slice of `bytes` bytes.
        unsafe { std::ptr::copy_nonoverlapping(copy.as_ptr().cast::<u8>(), data, bytes) };
    }
    Ok(())
}
