//! The kernel ABI: how a launch passes a kernel its arguments, as words. The lowering
//! (`offload-lowering`'s `kernel_abi`, `offload_to_gpu`, `offload_to_cpu`) builds kernel
//! signatures that take these words, and the runtime's backends pack them; both use this
//! module, so the two halves cannot drift apart.
//!
//! Every kernel argument becomes the parameters [`params_of`] lists, each 64-bit words:
//!
//! - a scalar: its bits, zero-extended;
//! - a 1-D region, slice or atomic array: a `memref<?xT>` descriptor, [`memref_1d`];
//! - a 2-D region: a `memref<?x?xT>` descriptor (rows, then row length), then its
//!   margin (0, or an interior region's), [`region_2d`];
//! - a 3-D region: a `memref<?x?x?xT>` descriptor (planes, rows, row length), then its
//!   margin, [`region_3d`];
//! - an `Indexed` region: its data's `memref<?xT>`, then its indices' `memref<?xi64>`,
//!   [`indexed`];
//! - last, the panic buffer: a `memref<?xi64>` of [`PANIC_BUFFER_WORDS`] words that
//!   receives panic reports `[count, site, value0, value1, scratch x3]`;
//! - on a GPU, then the [`GPU_HIDDEN`] index parameters, in that order;
//! - on the CPU backend, before all of the kernel's own, the [`CpuLeading`] words.

use crate::{Strategy, Ty};

/// One parameter of the kernel ABI, as the lowering declares it and the runtime packs
/// it: what [`params_of`] makes of a kernel argument.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Param {
    /// The argument's data: a memref of its element type with `rank` dynamic
    /// dimensions, slowest first ([`memref_1d`], [`memref_2d`], a 3-D one).
    Data { rank: u8 },
    /// A 2-D or 3-D region's margin: an `index`, 0 or an interior's.
    Margin,
    /// An `Indexed` region's indices: a `memref<?xi64>`.
    Indices,
    /// A scalar, by value.
    Scalar,
}

impl Param {
    /// How many 64-bit words the parameter takes: a memref's descriptor is its two
    /// pointers, its offset, and a size and a stride per dimension.
    pub const fn words(self) -> usize {
        match self {
            Param::Data { rank } => 3 + 2 * rank as usize,
            Param::Indices => 5,
            Param::Margin | Param::Scalar => 1,
        }
    }
}

/// The parameters a kernel argument of type `ty` becomes, in order (none for shared
/// arrays, which are not arguments). Everything the rest of this module packs, and the
/// signatures the lowering builds, follow it.
pub fn params_of(ty: &Ty) -> &'static [Param] {
    match ty {
        Ty::Region(_, strategy) => region_params(*strategy),
        Ty::Slice(_) | Ty::Atomic(_) => &[Param::Data { rank: 1 }],
        Ty::Scalar(_) => &[Param::Scalar],
        Ty::Shared(..) | Ty::Unit => &[],
    }
}

/// The parameters a region of `strategy` becomes: its data, with its rank's dimensions,
/// then a 2-D or 3-D region's margin, or an `Indexed` region's indices.
pub fn region_params(strategy: Strategy) -> &'static [Param] {
    match (strategy, strategy.rank()) {
        (_, 2) => &[Param::Data { rank: 2 }, Param::Margin],
        (_, 3) => &[Param::Data { rank: 3 }, Param::Margin],
        (Strategy::Indexed, _) => &[Param::Data { rank: 1 }, Param::Indices],
        _ => &[Param::Data { rank: 1 }],
    }
}

/// The words an argument of type `ty` takes.
pub fn words_of(ty: &Ty) -> usize {
    params_of(ty).iter().map(|p| p.words()).sum()
}

/// Words (`i64`) in the panic buffer a launch passes as the last kernel argument.
pub const PANIC_BUFFER_WORDS: usize = 7;

/// The most threads a workgroup may have, on every backend.
pub const MAX_WORKGROUP_THREADS: u32 = 1024;

/// Lanes in an NVIDIA warp: the subgroup width of CUDA devices.
pub const NVIDIA_WARP: u32 = 32;

/// The descriptor words of a `memref<?xT>` of `len` elements at `address`: allocated
/// and aligned pointer, offset, size, stride.
pub fn memref_1d(address: u64, len: u64) -> [u64; 5] {
    [address, address, 0, len, 1]
}

/// The descriptor words of a `memref<?x?xT>` of `rows` rows of `row_len` elements at
/// `address`: pointers, offset, the two sizes, the two strides.
pub fn memref_2d(address: u64, rows: u64, row_len: u64) -> [u64; 7] {
    [address, address, 0, rows, row_len, row_len, 1]
}

/// The words of a 2-D region: [`memref_2d`], then the margin of its interior.
pub fn region_2d(address: u64, rows: u64, row_len: u64, margin: u64) -> [u64; 8] {
    let m = memref_2d(address, rows, row_len);
    [m[0], m[1], m[2], m[3], m[4], m[5], m[6], margin]
}

/// The descriptor words of a `memref<?x?x?xT>` of `planes` planes of `rows` rows of
/// `row_len` elements at `address`: pointers, offset, the three sizes, the three strides.
pub fn memref_3d(address: u64, planes: u64, rows: u64, row_len: u64) -> [u64; 9] {
    let plane = rows * row_len;
    [
        address, address, 0, planes, rows, row_len, plane, row_len, 1,
    ]
}

/// The words of a 3-D region: [`memref_3d`], then the margin of its interior.
pub fn region_3d(address: u64, planes: u64, rows: u64, row_len: u64, margin: u64) -> [u64; 10] {
    let m = memref_3d(address, planes, rows, row_len);
    [m[0], m[1], m[2], m[3], m[4], m[5], m[6], m[7], m[8], margin]
}

/// The words of an `Indexed` region: its data (`len` elements at `address`) and its
/// `count` indices (at `indices`), each a `memref<?x..>` descriptor.
pub fn indexed(address: u64, len: u64, indices: u64, count: u64) -> [u64; 10] {
    let (d, i) = (memref_1d(address, len), memref_1d(indices, count));
    [d[0], d[1], d[2], d[3], d[4], i[0], i[1], i[2], i[3], i[4]]
}

/// An index parameter a GPU kernel takes after the panic buffer.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum GpuHidden {
    /// The first workgroup's index along a dimension (0: x, 1: y, 2: z): 0, or where
    /// this part of the launch starts, when a launch is split over devices or folded
    /// into several grids the device can run (workgroup positions are offset by it).
    GroupBase(u8),
    /// Bytes of dynamic shared memory the launch gives each workgroup.
    DynamicSharedBytes,
    /// Workgroups along a dimension of the whole launch (all its parts).
    Workgroups(u8),
}

/// The hidden GPU parameters, in the order the kernel takes them.
pub const GPU_HIDDEN: [GpuHidden; 7] = [
    GpuHidden::GroupBase(0),
    GpuHidden::GroupBase(1),
    GpuHidden::GroupBase(2),
    GpuHidden::DynamicSharedBytes,
    GpuHidden::Workgroups(0),
    GpuHidden::Workgroups(1),
    GpuHidden::Workgroups(2),
];

/// The words of the [`GPU_HIDDEN`] parameters, in order, for these values.
pub fn gpu_hidden_words(
    group_base: [u64; 3],
    dynamic_shared_bytes: u64,
    workgroups: [u64; 3],
) -> [u64; 7] {
    GPU_HIDDEN.map(|h| match h {
        GpuHidden::GroupBase(d) => group_base[d as usize],
        GpuHidden::DynamicSharedBytes => dynamic_shared_bytes,
        GpuHidden::Workgroups(d) => workgroups[d as usize],
    })
}

/// What the CPU backend's entry point takes before the kernel's own parameters: the
/// share of workgroups one host thread runs (every thread of each), and its shared
/// memory.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct CpuLeading {
    /// The share's workgroups, as flat indices `begin..end`.
    pub group_begin: u64,
    pub group_end: u64,
    /// The whole launch's workgroups in x, y and z.
    pub groups_x: u64,
    pub groups_y: u64,
    pub groups_z: u64,
    /// Threads per workgroup in x, y and z.
    pub size_x: u64,
    pub size_y: u64,
    pub size_z: u64,
    /// The workgroup's shared memory: its address and size in bytes (a `memref<?xi8>`).
    pub shared_address: u64,
    pub shared_bytes: u64,
}

/// Parameters of the CPU entry point before the kernel's own.
pub const CPU_LEADING_ARGS: usize = 9;

/// Words those parameters take (the shared memory is a `memref<?xi8>` of five words).
pub const CPU_LEADING_WORDS: usize = CPU_LEADING_ARGS + 4;

impl CpuLeading {
    /// The words, in the order the entry point takes them.
    pub fn words(&self) -> [u64; CPU_LEADING_WORDS] {
        let shared = memref_1d(self.shared_address, self.shared_bytes);
        [
            self.group_begin,
            self.group_end,
            self.groups_x,
            self.groups_y,
            self.groups_z,
            self.size_x,
            self.size_y,
            self.size_z,
            shared[0],
            shared[1],
            shared[2],
            shared[3],
            shared[4],
        ]
    }
}

/// A CPU kernel's entry point: one pointer per word ([`CpuLeading`] then the kernel's
/// own), each pointing at the word.
pub type CpuEntry = unsafe extern "C" fn(*mut *mut std::ffi::c_void);

/// The symbol of the entry point of the CPU code whose [`code_key`](crate::code_key) is
/// `key`: unique per kernel, so the objects of every kernel link into one program.
pub fn cpu_entry_symbol(key: &str) -> String {
    format!("offload_cpu_{key}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ScalarTy;

    /// Each packing takes the words the parameters of its argument's type say.
    #[test]
    fn every_packing_takes_the_words_its_parameters_say() {
        let region = |s| words_of(&Ty::Region(ScalarTy::F32, s));
        assert_eq!(memref_1d(1, 2).len(), region(Strategy::Linear1D));
        assert_eq!(
            memref_1d(1, 2).len(),
            region(Strategy::Chunked(crate::Param::Value(4)))
        );
        assert_eq!(memref_1d(1, 2).len(), words_of(&Ty::Slice(ScalarTy::F64)));
        assert_eq!(memref_1d(1, 2).len(), words_of(&Ty::Atomic(ScalarTy::U32)));
        assert_eq!(region_2d(1, 2, 3, 0).len(), region(Strategy::Linear2D));
        assert_eq!(
            region_2d(1, 2, 3, 0).len(),
            region(Strategy::Stencil2D(crate::Param::Value(1)))
        );
        assert_eq!(region_3d(1, 2, 3, 4, 0).len(), region(Strategy::Linear3D));
        assert_eq!(indexed(1, 2, 3, 4).len(), region(Strategy::Indexed));
        assert_eq!(words_of(&Ty::Scalar(ScalarTy::I8)), 1);
        assert_eq!(
            words_of(&Ty::Shared(ScalarTy::F32, Some(crate::Param::Value(4)))),
            0
        );
        assert_eq!(
            PANIC_BUFFER_WORDS, 7,
            "the panic buffer is a memref<?xi64> of seven words"
        );
    }

    #[test]
    fn descriptors_hold_pointers_offset_sizes_and_strides() {
        assert_eq!(memref_1d(0x1000, 7), [0x1000, 0x1000, 0, 7, 1]);
        assert_eq!(memref_2d(0x2000, 3, 5), [0x2000, 0x2000, 0, 3, 5, 5, 1]);
    }

    #[test]
    fn regions_carry_their_margin_and_indices_after_the_data() {
        assert_eq!(
            region_2d(0x2000, 3, 5, 1),
            [0x2000, 0x2000, 0, 3, 5, 5, 1, 1]
        );
        assert_eq!(
            region_3d(0x3000, 2, 3, 5, 0),
            [0x3000, 0x3000, 0, 2, 3, 5, 15, 5, 1, 0]
        );
        assert_eq!(
            indexed(0x1000, 9, 0x4000, 2),
            [0x1000, 0x1000, 0, 9, 1, 0x4000, 0x4000, 0, 2, 1]
        );
    }

    #[test]
    fn hidden_gpu_words_follow_the_declared_order() {
        assert_eq!(
            gpu_hidden_words([4, 5, 6], 1024, [96, 97, 98]),
            [4, 5, 6, 1024, 96, 97, 98]
        );
    }

    #[test]
    fn cpu_leading_words_end_with_the_shared_memref() {
        let leading = CpuLeading {
            group_begin: 1,
            group_end: 2,
            groups_x: 3,
            groups_y: 4,
            groups_z: 5,
            size_x: 6,
            size_y: 7,
            size_z: 8,
            shared_address: 0x9000,
            shared_bytes: 64,
        };
        assert_eq!(
            leading.words(),
            [1, 2, 3, 4, 5, 6, 7, 8, 0x9000, 0x9000, 0, 64, 1]
        );
    }
}
