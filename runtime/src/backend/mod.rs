//! The backend seam: what the runtime needs of a device, and the devices that provide it.
//! Everything above this module reaches a device only through [`Backend`] and
//! [`Memory`](crate::memory::Memory). GPUs run the one launch protocol of [`gpu`] over a
//! driver (CUDA's, HIP's for AMD); the CPU backend runs kernels on host threads.

mod cpu;
pub(crate) mod cuda;
mod gpu;
mod hip;

use crate::queue::{HostMemory, Queue, Recording};
use crate::{Device, Error, memory::Memory, panic::Issuer, plan::LaunchPlan};
use std::sync::Arc;

/// One device's backend.
pub(crate) trait Backend: Send + Sync {
    /// Runs a checked launch: copies host data in, runs the kernel, and copies regions
    /// back unless a thread panicked. A launch that writes only device-resident data may
    /// return before the kernel has finished; its panic then surfaces at the issuing
    /// thread's next synchronisation of the device.
    fn launch(&'static self, plan: LaunchPlan<'_, '_>) -> Result<(), Error>;
    /// Waits for every launch on the device, and reports the first unreported panic of
    /// the calling thread's launches there.
    fn synchronize(&self) -> Result<(), Error>;
    /// `bytes` of zeroed device memory; more than the device can hold is
    /// [`Error::OutOfMemory`].
    fn allocate_zeroed(&'static self, bytes: u128) -> Result<Box<dyn Memory>, Error>;
    /// Device memory holding a copy of `data`.
    fn upload(&'static self, data: &[u8]) -> Result<Box<dyn Memory>, Error>;
    /// Copies `bytes` from device address `from` to device address `to`, after the
    /// launches already made on the device.
    ///
    /// # Safety
    ///
    /// Both ranges must lie in live memory of this device that no one else writes, and
    /// must not overlap.
    unsafe fn copy(&self, from: u64, to: u64, bytes: usize) -> Result<(), Error>;
    /// Hands over the launches of an issuer whose thread ends, for the next
    /// synchronisation to release. Must make no driver call: it runs while the thread's
    /// locals are destroyed.
    fn retire(&self, _issuer: Issuer) {}
    /// A new queue of the device's work: a user's [`crate::Stream`].
    fn queue(&'static self) -> Result<Arc<dyn Queue>, Error>;
    /// `bytes` of zeroed host memory that copies on a queue read and write without the
    /// host's help (page-locked, on a GPU).
    fn pinned(&'static self, bytes: usize) -> Result<Box<dyn HostMemory>, Error>;
    /// A queue that records the work given to it, to be replayed as a [`crate::Graph`],
    /// rather than run it.
    fn recorder(&'static self) -> Result<Arc<dyn Recording>, Error>;
}

/// Every device's backend, made once and kept.
static BACKENDS: std::sync::OnceLock<Vec<Box<dyn Backend>>> = std::sync::OnceLock::new();

/// Tells every backend that an issuer's thread ended ([`Backend::retire`]).
fn retire(issuer: Issuer) {
    for backend in BACKENDS.get().into_iter().flatten() {
        backend.retire(issuer);
    }
}

/// The backend of `device`, made once per device of this machine and kept: a launch
/// finds it without allocating. A device this machine lacks is
/// [`Error::InvalidLaunch`].
pub(crate) fn of(device: &Device) -> Result<&'static dyn Backend, Error> {
    let all = devices();
    let backends = BACKENDS.get_or_init(|| all.iter().map(make).collect());
    // Launches pass this machine's own entries, found by address; a copy by value.
    let index = (all.iter().position(|d| std::ptr::eq(d, device)))
        .or_else(|| all.iter().position(|d| d == device))
        .ok_or_else(|| {
            Error::InvalidLaunch(format!(
                "{device} is not a device of this machine (see `offload::devices()`)"
            ))
        })?;
    Ok(&*backends[index])
}

fn make(device: &Device) -> Box<dyn Backend> {
    match device {
        Device::Cuda { ordinal, .. } => Box::new(cuda::gpu(*ordinal, device)),
        Device::Hip { ordinal, .. } => Box::new(hip::gpu(*ordinal, device)),
        Device::Cpu => Box::new(cpu::Cpu),
    }
}

/// Every device of every backend: CUDA GPUs first, in driver order, then AMD GPUs in
/// HIP's order, then the CPU. Listed once: the drivers' device lists do not change while
/// a program runs, and a launch should not pay for a fresh copy.
pub(crate) fn devices() -> &'static [Device] {
    static ALL: std::sync::OnceLock<Vec<Device>> = std::sync::OnceLock::new();
    ALL.get_or_init(|| {
        let mut all = cuda::devices();
        all.extend(hip::devices());
        all.push(Device::Cpu);
        all
    })
}

/// Why there are no AMD GPUs, when the HIP runtime is not there.
pub(crate) fn why_no_hip() -> Option<String> {
    hip::why_absent()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::args::{DynamicArg, KernelArg};
    use crate::kernel::KernelDescriptor;
    use crate::plan::{abi_words, dispatch_grids, grid_parts};
    use offload_mir::interp::Layout;
    use offload_mir::{ScalarTy, Strategy, abi};

    static EVERY_KIND: KernelDescriptor = KernelDescriptor::new(
        "every_kind",
        "// offload-mir v1
kernel every_kind(mut _1: Region<f32, Linear1D>, mut _2: Region<f32, Linear2D>, mut _3: Region<f32, Linear3D>, mut _4: Region<f32, Chunked<4>>, mut _5: Region<f32, Stencil2D<1>>, mut _6: Region<f32, Indexed>, _7: &[f64], mut _8: Atomic<u32>, _9: f32) {
    file \"every_kind.rs\";
    let mut _0: ();

    bb0: {
        return; // 1:1
    }
}
",
        &[],
    );

    /// A launch's grids as both GPU backends hand them to their drivers (the CUDA
    /// driver and HIP read the words through the same parameter pointers): (grid, block,
    /// shared bytes, words read through the pointers) each.
    type Dispatches = Vec<([u32; 3], [u32; 3], u32, Vec<u64>)>;

    fn dispatches(plan: &LaunchPlan<'_, '_>) -> (Dispatches, crate::plan::Words) {
        let mut next = 0x1000u64;
        let own = abi_words(plan.args, |_, _, bytes| {
            next += 0x1000 + bytes as u64;
            Ok(next)
        })
        .unwrap();
        let mut seen = Vec::new();
        dispatch_grids(plan, own.clone(), 0xdead_0000, |grid| {
            let read: Vec<u64> = grid
                .params()
                .iter()
                // SAFETY: each pointer points at a live word of `grid.words`.
                .map(|p| unsafe { *p.cast::<u64>() })
                .collect();
            seen.push((grid.grid, grid.block, grid.shared_bytes, read));
            Ok(())
        })
        .unwrap();
        (seen, own)
    }

    #[test]
    fn gpu_backends_hand_their_drivers_the_same_words() {
        let body = EVERY_KIND.body().unwrap().body();
        let (layout_2d, layout_3d) = (
            Layout {
                row_len: Some(8),
                margin: 1,
                ..Layout::default()
            },
            Layout {
                row_len: Some(4),
                plane_rows: Some(4),
                ..Layout::default()
            },
        );
        let indices = Layout {
            indices: Some(vec![3, 1, 2]),
            ..Layout::default()
        };
        let stencil = Layout {
            row_len: Some(8),
            ..Layout::default()
        };
        // Every strategy, a slice, an atomic and a scalar, under one grid, a folded grid
        // (past 65535 workgroups in y), a share of a split launch and dynamic shared memory.
        for (workgroups, group_base, dyn_cache) in [
            ([4, 1, 1], 0, 0),
            ([2, 70_000, 1], 0, 1024),
            ([3, 1, 1], 5, 48 * 1024),
        ] {
            let mut data: Vec<Vec<u8>> = [64, 64, 64, 64, 64, 12, 24, 8]
                .iter()
                .map(|&n| vec![0u8; n * 4])
                .collect();
            let [d1, d2, d3, d4, d5, d6, d7, d8] = &mut data[..] else {
                unreachable!()
            };
            let region = |data, strategy, layout| DynamicArg::Region {
                elem: ScalarTy::F32,
                strategy,
                data,
                layout,
            };
            let plain = Layout::default();
            let mut args: Vec<KernelArg<'_>> = [
                region(&mut d1[..], Strategy::Linear1D, &plain),
                region(&mut d2[..], Strategy::Linear2D, &layout_2d),
                region(&mut d3[..], Strategy::Linear3D, &layout_3d),
                region(
                    &mut d4[..],
                    Strategy::Chunked(offload_mir::Param::Value(4)),
                    &plain,
                ),
                region(
                    &mut d5[..],
                    Strategy::Stencil2D(offload_mir::Param::Value(1)),
                    &stencil,
                ),
                region(&mut d6[..], Strategy::Indexed, &indices),
                DynamicArg::Slice {
                    elem: ScalarTy::F64,
                    data: &d7[..],
                },
                DynamicArg::Atomic {
                    elem: ScalarTy::U32,
                    data: &mut d8[..],
                },
                DynamicArg::Scalar {
                    ty: ScalarTy::F32,
                    bits: 2.5f32.to_bits() as u64,
                },
            ]
            .into_iter()
            .map(|a| KernelArg::dynamic(a).unwrap())
            .collect();
            // Each argument packs the words `offload_mir::abi` describes for its type,
            // which the lowering's signatures follow.
            for ((_, decl), arg) in body.args().zip(&args) {
                let packed = arg
                    .kind
                    .abi_words(0x1000, Some(0x2000), &mut Default::default())
                    .unwrap_or(1);
                assert_eq!(packed, abi::words_of(&decl.ty), "{}", decl.ty);
            }
            let plan = LaunchPlan {
                body,
                descriptor: &EVERY_KIND,
                args: &mut args,
                workgroups,
                workgroup_size: [32, 2, 1],
                dyn_cache,
                resident_workgroups: None,
                group_base,
                groups: [workgroups[0] + group_base, workgroups[1], workgroups[2]],
            };
            let (seen, own) = dispatches(&plan);
            let parts = grid_parts(workgroups);
            assert_eq!(seen.len(), parts.len());
            for ((grid, block, shared, words), part) in seen.iter().zip(&parts) {
                assert_eq!(
                    (*grid, *block, *shared),
                    (part.count, [32, 2, 1], dyn_cache)
                );
                let mut want = own.clone();
                want.extend(abi::memref_1d(0xdead_0000, abi::PANIC_BUFFER_WORDS as u64));
                let mut base = part.start.map(u64::from);
                base[0] += group_base as u64;
                want.extend(abi::gpu_hidden_words(
                    base,
                    dyn_cache as u64,
                    plan.groups.map(u64::from),
                ));
                assert_eq!(words[..], want[..]);
            }
        }
    }
}
