//! `offload`: safe GPU offloading for stable Rust.
//!
//! Mark a function `#[offload_kernel]` and launch it with `offload!`:
//!
//! ```ignore
//! use offload::prelude::*;
//!
//! #[offload_kernel]
//! fn saxpy(mut y: Region<f32, Linear1D>, x: &[f32], a: f32) {
//!     let i = y.index();
//!     if let Some(v) = y.get_mut() {
//!         *v = a * x[i] + *v;
//!     }
//! }
//!
//! let (mut y, x) = (vec![1.0f32; 1 << 20], vec![2.0f32; 1 << 20]);
//! offload! { kernel = saxpy, args = (&mut y, &x, 3.0f32) };
//! ```
//!
//! The macro translates the kernel's body to MIR at compile time; at run time the MIR is
//! lowered through MLIR to PTX for an NVIDIA GPU, a code object for an AMD GPU (through
//! the HIP runtime; compiled and checked, not yet run on such a GPU), or host code for the
//! CPU backend, once per kernel and device, and launched. Without a GPU the CPU backend
//! runs the same lowered code. `OFFLOAD_DEVICE=cpu|cuda:N|hip:N` picks the device.
//!
//! # Data movement and failure
//!
//! Regions (`&mut` data) and slices are copied to the device before the kernel runs and
//! regions are copied back after it. If any thread panics (failed bounds check, division
//! by zero), the launch returns [`Error::KernelPanic`] naming the first panic's source
//! line and **no region is copied back**: the caller's data is exactly as it was.

mod aot;
mod args;
mod backend;
mod buffer;
mod compile;
mod device;
mod disk_cache;
mod error;
mod graph;
mod hazards;
mod kernel;
pub mod kernel_view;
mod launch;
mod machine;
mod mark;
mod memory;
#[cfg(feature = "mpi")]
pub mod mpi;
pub mod nccl;
mod nvtx;
mod panic;
mod pinned;
mod plan;
mod queue;
mod recent;
mod region;
mod scalar;
mod split;
mod stream;
mod symbol;
mod trace;

pub use buffer::{DeviceBuffer, DeviceSlice, DeviceSliceMut, SplitBuffer};
pub use device::{Device, parse_selection};
pub use error::{CompileCause, Error, LowerFailure};
pub use graph::Graph;
pub use kernel::MirError;
pub use kernel_view::Atomic;
pub use launch::LaunchOptions;
pub use nvtx::{Range, range};
pub use pinned::{PinnedSlice, PinnedSliceMut, PinnedVec};
pub use stream::{Event, Stream};

/// Whether this program can compile kernels at run time (the `jit` feature). Without it,
/// kernels run only from code built ahead of time (`offload-build`).
pub const HAS_JIT: bool = cfg!(feature = "jit");
pub use machine::{default_device, devices, synchronize};
// What the macros expand to. Hidden, and safe to call only because nothing it is given
// is trusted: `KernelDescriptor::body` links and verifies the MIR
// (`offload_mir::link`), `launch` re-checks every argument against it, and strategies
// are sealed, so their `check_launch` is ours.
#[doc(hidden)]
pub use aot::best_ptx;
#[doc(hidden)]
pub use args::{DynamicArg, KernelArg};
#[doc(hidden)]
pub use compile::{CompileCache, jit_compiles};
#[doc(hidden)]
pub use disk_cache::DiskCache;
#[doc(hidden)]
pub use kernel::{DeviceFn, KernelDescriptor};
#[doc(hidden)]
pub use launch::launch;
/// What the macros' expansions name, and nothing else should.
#[doc(hidden)]
pub mod __private {
    pub use crate::launch::launches;
    pub use crate::stream::on_stream;
    pub use const_format::formatcp;

    /// The error a launch of a generic kernel's instance gets when the body did not
    /// translate for its types (`optional_instance` in the translator).
    pub fn not_for_types(kernel: &str, why: &'static str) -> crate::Error {
        crate::Error::compile(kernel, crate::CompileCause::NotForTypes(why))
    }
}
/// The 16-bit floats kernels take: the `half` crate's IEEE `f16` and `bf16`, whose
/// arithmetic in a kernel rounds each result to the type, as theirs does on the host.
pub use half::{bf16, f16};
pub use offload_macros::{offload, offload_device, offload_kernel, try_offload};
pub use offload_mir::ScalarTy;
#[doc(hidden)]
pub use offload_mir::Strategy;
pub use region::{
    AtomicData, Chunked, DEFAULT_WORKGROUP_SIZE, Indexed, IntoAtomic, IntoRegion, IntoSlice,
    Linear1D, Linear2D, Linear3D, MAX_WORKGROUP_SIZE, MultiDimensional, OneDimensional,
    PartitioningStrategy, Region, Shape, SliceData, Stencil2D,
};
pub use scalar::{Float, Int, Num, Scalar};

/// What a kernel file needs: `use offload::prelude::*;`.
pub mod prelude {
    pub use crate::kernel_view::{
        DynShared, Shared, Shared2D, subgroup_all, subgroup_any, subgroup_ballot,
        subgroup_broadcast, subgroup_lane, subgroup_max, subgroup_min, subgroup_shuffle,
        subgroup_shuffle_xor, subgroup_size, subgroup_sum, sync_threads, thread_idx, thread_rank,
        tile_mma, workgroup_count, workgroup_dim, workgroup_idx, workgroup_max, workgroup_min,
        workgroup_sum,
    };
    pub use crate::{
        Atomic, Chunked, DeviceBuffer, Error, Float, Indexed, Int, Linear1D, Linear2D, Linear3D,
        Num, PinnedVec, Region, SplitBuffer, Stencil2D, Stream, bf16, devices, f16, offload,
        offload_device, offload_kernel, try_offload,
    };
}
