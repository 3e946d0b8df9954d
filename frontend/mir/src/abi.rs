//! The kernel ABI: how a launch passes a kernel its arguments, as words. The lowering
//! (`offload-lowering`'s `kernel_abi`, `offload_to_gpu`, `offload_to_cpu`) builds kernel
//! signatures that take these words, and the runtime's backends pack them; both use this
//! module, so the two halves cannot drift apart.
//!
//! Every kernel parameter travels as 64-bit words:
//!
//! - a scalar: its bits, zero-extended;
//! - a 1-D region, slice or atomic array: a `memref<?xT>` descriptor, [`memref_1d`];
//! - a 2-D region: a `memref<?x?xT>` descriptor (rows, then row length), [`memref_2d`];
//! - last, the panic buffer: a `memref<?xi64>` of [`PANIC_BUFFER_WORDS`] words that
//!   receives panic reports `[count, site, value0, value1, scratch x3]`;
//! - on a GPU, then the [`GPU_HIDDEN`] index parameters, in that order;
//! - on the CPU backend, before all of the kernel's own, the [`CpuLeading`] words.

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

/// An index parameter a GPU kernel takes after the panic buffer.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum GpuHidden {
    /// The first workgroup's x index: 0, or a share's start when a launch is split over
    /// devices (workgroup x positions are offset by it).
    GroupBase,
    /// Bytes of dynamic shared memory the launch gives each workgroup.
    DynamicSharedBytes,
    /// Workgroups in x of the whole launch (all shares of a split one).
    WorkgroupsX,
}

/// The hidden GPU parameters, in the order the kernel takes them.
pub const GPU_HIDDEN: [GpuHidden; 3] = [
    GpuHidden::GroupBase,
    GpuHidden::DynamicSharedBytes,
    GpuHidden::WorkgroupsX,
];

/// The words of the [`GPU_HIDDEN`] parameters, in order, for these values.
pub fn gpu_hidden_words(group_base: u64, dynamic_shared_bytes: u64, workgroups_x: u64) -> [u64; 3] {
    GPU_HIDDEN.map(|h| match h {
        GpuHidden::GroupBase => group_base,
        GpuHidden::DynamicSharedBytes => dynamic_shared_bytes,
        GpuHidden::WorkgroupsX => workgroups_x,
    })
}

/// What the CPU backend's entry point takes before the kernel's own parameters: the
/// share of workgroups and threads one host thread runs, and its shared memory.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct CpuLeading {
    /// The share's workgroups, as flat indices `begin..end`.
    pub group_begin: u64,
    pub group_end: u64,
    /// The whole launch's workgroups in x and y.
    pub groups_x: u64,
    pub groups_y: u64,
    /// Threads per workgroup in x and y.
    pub size_x: u64,
    pub size_y: u64,
    /// The threads of each workgroup the call runs, as flat indices `begin..end`.
    pub thread_begin: u64,
    pub thread_end: u64,
    /// The workgroup's shared memory: its address and size in bytes (a `memref<?xi8>`).
    pub shared_address: u64,
    pub shared_bytes: u64,
    /// The barrier handle a barrier call passes back to the host (0 without barriers).
    pub barrier: u64,
}

/// Parameters of the CPU entry point before the kernel's own.
pub const CPU_LEADING_ARGS: usize = 10;

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
            self.size_x,
            self.size_y,
            self.thread_begin,
            self.thread_end,
            shared[0],
            shared[1],
            shared[2],
            shared[3],
            shared[4],
            self.barrier,
        ]
    }
}

/// What a CPU kernel's barrier word points at: the runtime's barrier state, whose first
/// field this is. A barrier in the kernel calls [`CPU_BARRIER_SYMBOL`] with the pointer,
/// and that calls `wait` with it.
#[repr(C)]
pub struct CpuBarrier {
    pub wait: unsafe extern "C" fn(*mut CpuBarrier),
}

/// The function a CPU kernel's barriers call: [`offload_cpu_barrier`]. Code built ahead
/// of time links against it; the JIT binds the name to it.
pub const CPU_BARRIER_SYMBOL: &str = "offload_cpu_barrier";

/// A barrier in a CPU kernel: hands the thread's barrier state to its `wait`.
///
/// # Safety
///
/// `barrier` must point at a live [`CpuBarrier`]; kernels pass the barrier word the
/// runtime gave them, which does.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn offload_cpu_barrier(barrier: *mut CpuBarrier) {
    unsafe { ((*barrier).wait)(barrier) }
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

    #[test]
    fn descriptors_hold_pointers_offset_sizes_and_strides() {
        assert_eq!(memref_1d(0x1000, 7), [0x1000, 0x1000, 0, 7, 1]);
        assert_eq!(memref_2d(0x2000, 3, 5), [0x2000, 0x2000, 0, 3, 5, 5, 1]);
    }

    #[test]
    fn hidden_gpu_words_follow_the_declared_order() {
        assert_eq!(gpu_hidden_words(4, 1024, 96), [4, 1024, 96]);
    }

    #[test]
    fn cpu_leading_words_put_the_shared_memref_before_the_barrier() {
        let leading = CpuLeading {
            group_begin: 1,
            group_end: 2,
            groups_x: 3,
            groups_y: 4,
            size_x: 5,
            size_y: 6,
            thread_begin: 7,
            thread_end: 8,
            shared_address: 0x9000,
            shared_bytes: 64,
            barrier: 0xb,
        };
        assert_eq!(
            leading.words(),
            [1, 2, 3, 4, 5, 6, 7, 8, 0x9000, 0x9000, 0, 64, 1, 0xb]
        );
    }
}
