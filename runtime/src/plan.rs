//! The launch plan: a checked launch, ready for a backend, and its arguments as the
//! kernel ABI's words.

pub(crate) use crate::args::Words;
use crate::{
    Error,
    args::{ArgKind, KernelArg},
    kernel::KernelDescriptor,
};
use offload_mir::{Body, abi};
use smallvec::SmallVec;

/// A checked launch, ready for a backend.
pub(crate) struct LaunchPlan<'b, 'a> {
    pub body: &'b Body,
    pub descriptor: &'static KernelDescriptor,
    pub args: &'b mut [KernelArg<'a>],
    pub workgroups: [u32; 3],
    pub workgroup_size: [u32; 3],
    pub dyn_cache: u32,
    /// `LaunchOptions::resident_workgroups`: what the kernel is compiled to leave room for.
    pub resident_workgroups: Option<u32>,
    /// The first workgroup's x index: 0, or a share's start in a split launch.
    pub group_base: u32,
    /// The whole launch's workgroups: `workgroups`, or all shares' in a split launch.
    pub groups: [u32; 3],
}

/// The kernel ABI's argument words for `args`, memrefs expanded into their descriptors.
/// `place` puts each argument with host data (its pointer and byte count) where the kernel
/// will read it and returns that address; device-resident data is used where it lives
/// (`launch` has checked its device) and scalars are passed by value.
pub(crate) fn abi_words(
    args: &[KernelArg<'_>],
    mut place: impl FnMut(&ArgKind, *mut u8, usize) -> Result<u64, Error>,
) -> Result<Words, Error> {
    let mut words = Words::new();
    for arg in args {
        let address = match (arg.kind.resident(), arg.kind.bytes(), &arg.kind) {
            (Some(resident), _, _) => resident.address,
            (None, Some((data, bytes)), kind) => place(kind, data, bytes)?,
            (None, None, ArgKind::Scalar { bits, .. }) => {
                words.push(*bits);
                continue;
            }
            (None, None, _) => unreachable!("only scalars have neither host nor device data"),
        };
        // An `Indexed` region's indices travel after its data, placed like a slice.
        let indices = match arg.kind.indices() {
            Some(kind) => {
                let (data, bytes) = kind.bytes().expect("indices are host data");
                Some(place(&kind, data, bytes)?)
            }
            None => None,
        };
        arg.kind
            .abi_words(address, indices, &mut words)
            .expect("arguments with data are memrefs");
    }
    Ok(words)
}

/// The words after a GPU kernel's own: its panic buffer, then the hidden parameters
/// ([`offload_mir::abi::GPU_HIDDEN`]), which each grid of a launch sets for itself.
pub(crate) struct GpuGrids {
    /// Where the hidden words start.
    hidden: usize,
    /// The first workgroup's x index: 0, or a share's start in a split launch.
    group_base: u32,
    dyn_cache: u32,
    /// The whole launch's workgroups.
    groups: [u32; 3],
}

impl GpuGrids {
    /// Appends `launch`'s panic buffer at `report` and room for the hidden words to
    /// `words`.
    pub(crate) fn new(launch: &LaunchPlan<'_, '_>, words: &mut Words, report: u64) -> GpuGrids {
        GpuGrids::append(
            words,
            report,
            launch.group_base,
            launch.dyn_cache,
            launch.groups,
        )
    }

    fn append(
        words: &mut Words,
        report: u64,
        group_base: u32,
        dyn_cache: u32,
        groups: [u32; 3],
    ) -> GpuGrids {
        words.extend(abi::memref_1d(report, abi::PANIC_BUFFER_WORDS as u64));
        let hidden = words.len();
        words.extend([0; abi::GPU_HIDDEN.len()]);
        GpuGrids {
            hidden,
            group_base,
            dyn_cache,
            groups,
        }
    }

    /// Sets the hidden words for grid `part`: where its workgroups start (a share of a
    /// split launch also from its first workgroup in x), the dynamic shared memory, and
    /// the whole launch's workgroups.
    pub(crate) fn enter(&self, words: &mut [u64], part: &GridPart) {
        let mut base = part.start.map(u64::from);
        base[0] += self.group_base as u64;
        words[self.hidden..].copy_from_slice(&abi::gpu_hidden_words(
            base,
            self.dyn_cache as u64,
            self.groups.map(u64::from),
        ));
    }
}

/// One grid of a GPU launch as a driver takes it: its workgroups and threads per
/// workgroup along x, y and z, its dynamic shared memory, and its parameter words (each
/// passed as a pointer to its 64-bit slot).
pub(crate) struct GpuDispatch<'w> {
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub shared_bytes: u32,
    pub words: &'w [u64],
}

impl GpuDispatch<'_> {
    /// The driver's kernel parameters (`cuLaunchKernel`, `hipModuleLaunchKernel`): a
    /// pointer to each 64-bit word. Drivers read as many bytes as each parameter has,
    /// which on little-endian hosts are the value's own, and never write through them.
    pub(crate) fn params(&self) -> SmallVec<[*mut std::ffi::c_void; 80]> {
        self.words
            .iter()
            .map(|w| (w as *const u64).cast_mut().cast())
            .collect()
    }
}

/// Calls `dispatch` for each grid `launch` runs as ([`grid_parts`]), in order, with the
/// kernel's own `words` followed by the panic buffer at `report` and that grid's hidden
/// words ([`GpuGrids`]). Every GPU backend hands its driver exactly these, so CUDA and
/// HIP launches agree word for word.
pub(crate) fn dispatch_grids(
    launch: &LaunchPlan<'_, '_>,
    mut words: Words,
    report: u64,
    mut dispatch: impl FnMut(GpuDispatch<'_>) -> Result<(), Error>,
) -> Result<(), Error> {
    let grids = GpuGrids::new(launch, &mut words, report);
    for part in grid_parts(launch.workgroups) {
        grids.enter(&mut words, &part);
        dispatch(GpuDispatch {
            grid: part.count,
            block: launch.workgroup_size,
            shared_bytes: launch.dyn_cache,
            words: &words,
        })?;
    }
    Ok(())
}

// A launch with more workgroups along an axis than a grid may have runs as several
// grids, each told where it starts; workgroups are independent, so running them one
// grid after another on a stream is the same launch.

/// The most workgroups a grid may have along x, y and z: CUDA's limits (every GPU since
/// compute capability 3.0), within HIP's too.
const MAX_GRID: [u32; 3] = [i32::MAX as u32, 65535, 65535];

/// One grid of a launch: the workgroups `start .. start + count` along each axis.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct GridPart {
    pub start: [u32; 3],
    pub count: [u32; 3],
}

/// Whether a grid of `workgroups` is launched in more than one part ([`grid_parts`]).
pub(crate) fn folds(workgroups: [u32; 3]) -> bool {
    workgroups.iter().zip(MAX_GRID).any(|(&n, max)| n > max)
}

/// The grids a launch of `workgroups` runs as: one, unless an axis has more workgroups
/// than a grid may.
pub(crate) fn grid_parts(workgroups: [u32; 3]) -> SmallVec<[GridPart; 1]> {
    let ranges = |d: usize| {
        (0..workgroups[d].div_ceil(MAX_GRID[d])).map(move |i| {
            let start = i * MAX_GRID[d];
            (start, (workgroups[d] - start).min(MAX_GRID[d]))
        })
    };
    let mut parts = SmallVec::new();
    for (z, nz) in ranges(2) {
        for (y, ny) in ranges(1) {
            for (x, nx) in ranges(0) {
                parts.push(GridPart {
                    start: [x, y, z],
                    count: [nx, ny, nz],
                });
            }
        }
    }
    parts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_grid_folds_only_past_the_limits() {
        assert!(!folds([i32::MAX as u32, 65535, 65535]));
        assert!(folds([i32::MAX as u32 + 1, 1, 1]));
        assert!(folds([1, 65536, 1]));
        assert!(folds([1, 1, 65536]));
        assert_eq!(grid_parts([1, 65536, 1]).len(), 2);
    }

    #[test]
    fn gpu_words_follow_the_kernel_abi() {
        // A kernel's own words, then the panic buffer's descriptor, then per grid the
        // hidden words in `GPU_HIDDEN`'s order.
        let mut words: Words = [11, 12].into_iter().collect();
        let grids = GpuGrids::append(&mut words, 0x5000, 3, 256, [2, 70_000, 1]);
        let parts = grid_parts([2, 70_000, 1]);
        grids.enter(&mut words, &parts[1]);
        let mut want = vec![11, 12];
        want.extend(abi::memref_1d(0x5000, abi::PANIC_BUFFER_WORDS as u64));
        want.extend(abi::gpu_hidden_words([3, 65535, 0], 256, [2, 70_000, 1]));
        assert_eq!(words[..], want[..]);
    }

    #[test]
    fn a_launch_within_the_grid_limits_is_one_grid() {
        assert_eq!(
            grid_parts([4096, 65535, 3])[..],
            [GridPart {
                start: [0, 0, 0],
                count: [4096, 65535, 3]
            }]
        );
    }

    #[test]
    fn axes_past_the_grid_limits_run_as_several_grids() {
        let parts = grid_parts([2, 70_000, 65_536]);
        let starts: Vec<[u32; 3]> = parts.iter().map(|p| p.start).collect();
        assert_eq!(
            starts,
            [[0, 0, 0], [0, 65535, 0], [0, 0, 65535], [0, 65535, 65535]]
        );
        let counts: Vec<[u32; 3]> = parts.iter().map(|p| p.count).collect();
        assert_eq!(
            counts,
            [
                [2, 65535, 65535],
                [2, 4465, 65535],
                [2, 65535, 1],
                [2, 4465, 1]
            ]
        );
    }
}
