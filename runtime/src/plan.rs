//! The launch plan: a checked launch, ready for a backend, and its arguments as the
//! kernel ABI's words.

use crate::{
    Error,
    args::{ArgKind, KernelArg},
    kernel::KernelDescriptor,
};
use offload_mir::Body;

/// A checked launch, ready for a backend.
pub(crate) struct LaunchPlan<'b, 'a> {
    pub body: &'b Body,
    pub descriptor: &'static KernelDescriptor,
    pub args: &'b mut [KernelArg<'a>],
    pub workgroups: [u32; 3],
    pub workgroup_size: [u32; 3],
    pub dyn_cache: u32,
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
) -> Result<Vec<u64>, Error> {
    let mut words = Vec::new();
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
        words.extend(
            arg.kind
                .abi_words(address, indices)
                .expect("arguments with data are memrefs"),
        );
    }
    Ok(words)
}
