//! The types a kernel body is type-checked against.
//!
//! `#[offload_kernel]` compiles the kernel's body a second time as an ordinary,
//! never-called Rust function whose `Region` parameters have the types here, so rustc
//! reports type errors in kernels with its usual precision. These functions never run:
//! kernels run as lowered code on a device or the CPU backend. Their docs describe the
//! device-side meaning.

use crate::{Chunked, Indexed, Linear1D, Linear2D, Linear3D, Stencil2D};
use std::marker::PhantomData;

/// A kernel's view of a `Region` parameter.
pub struct Region<T, S> {
    _element: PhantomData<T>,
    _strategy: PhantomData<S>,
}

const NEVER: &str = "kernel bodies are type-checked on the host, never run there";

impl<T, S> Region<T, S> {
    /// The (first) element index this thread owns under the region's strategy; for an
    /// `Indexed` region, the thread's position in the indices.
    pub fn index(&self) -> usize {
        unreachable!("{NEVER}")
    }

    /// The number of elements in the region.
    pub fn len(&self) -> usize {
        unreachable!("{NEVER}")
    }

    /// Whether the region has no elements. The kernel translator does not accept this
    /// call yet (a compile error); compare `len()` with 0.
    pub fn is_empty(&self) -> bool {
        unreachable!("{NEVER}")
    }
}

/// Row and column queries of the 2-D strategies.
macro_rules! coordinates {
    () => {
        /// This thread's row, in the whole region (an interior region's first row is its
        /// margin).
        pub fn row(&self) -> usize {
            unreachable!("{NEVER}")
        }

        /// This thread's column, in the whole region.
        pub fn col(&self) -> usize {
            unreachable!("{NEVER}")
        }

        extents!();
    };
}

/// Row length and row count of the multi-dimensional strategies.
macro_rules! extents {
    () => {
        /// Elements per row, of the whole region.
        pub fn width(&self) -> usize {
            unreachable!("{NEVER}")
        }

        /// Rows (per plane of a 3-D region), of the whole region.
        pub fn height(&self) -> usize {
            unreachable!("{NEVER}")
        }
    };
}

impl<T> Region<T, Linear1D> {
    /// This thread's element, or `None` for threads past the end of the region.
    pub fn get_mut(&mut self) -> Option<&mut T> {
        unreachable!("{NEVER}")
    }
}

impl<T, const N: usize> Region<T, Chunked<N>> {
    /// This thread's chunk of up to `N` elements, or `None` past the end.
    pub fn get_mut(&mut self) -> Option<&mut [T]> {
        unreachable!("{NEVER}")
    }
}

impl<T> Region<T, Linear2D> {
    /// This thread's element, or `None` for threads outside the region.
    pub fn get_mut(&mut self) -> Option<&mut T> {
        unreachable!("{NEVER}")
    }

    coordinates!();
}

impl<T> Region<T, Linear3D> {
    /// This thread's element, or `None` for threads outside the region.
    pub fn get_mut(&mut self) -> Option<&mut T> {
        unreachable!("{NEVER}")
    }

    /// This thread's column (x), in the whole region.
    pub fn x(&self) -> usize {
        unreachable!("{NEVER}")
    }

    /// This thread's row (y) in its plane.
    pub fn y(&self) -> usize {
        unreachable!("{NEVER}")
    }

    /// This thread's plane (z).
    pub fn z(&self) -> usize {
        unreachable!("{NEVER}")
    }

    /// Planes.
    pub fn depth(&self) -> usize {
        unreachable!("{NEVER}")
    }

    extents!();
}

impl<T> Region<T, Indexed> {
    /// The element this thread's index names (thread `t` owns `data[indices[t]]`), or
    /// `None` for threads past the last index.
    pub fn get_mut(&mut self) -> Option<&mut T> {
        unreachable!("{NEVER}")
    }
}

impl<T, const R: usize> Region<T, Stencil2D<R>> {
    /// The element `dr` rows and `dc` columns from this thread's, or `None` outside the
    /// region. `|dr|, |dc| <= R`.
    pub fn get(&self, dr: isize, dc: isize) -> Option<T> {
        let _ = (dr, dc);
        unreachable!("{NEVER}")
    }

    /// Like `get`, with coordinates past the edge clamped to it.
    pub fn get_clamped(&self, dr: isize, dc: isize) -> T {
        let _ = (dr, dc);
        unreachable!("{NEVER}")
    }

    coordinates!();
}

/// This thread's index in its workgroup along `dim` (0: x, 1: y, 2: z); CUDA's
/// `threadIdx`. In kernels only; `dim` must be a constant.
pub fn thread_idx(dim: usize) -> usize {
    let _ = dim;
    unreachable!("{NEVER}")
}

/// This thread's linear index in its workgroup: `x + y * dim_x + z * dim_x * dim_y`
/// for `thread_idx` `(x, y, z)` and `workgroup_dim` `(dim_x, dim_y, dim_z)`. Unlike
/// `thread_idx(0)`, no two threads of a workgroup share it, so shared-memory slots
/// indexed by it are proven to be each thread's own (see [`Shared`]).
pub fn thread_rank() -> usize {
    unreachable!("{NEVER}")
}

/// This thread's workgroup's index in the launch along `dim`; CUDA's `blockIdx`.
pub fn workgroup_idx(dim: usize) -> usize {
    let _ = dim;
    unreachable!("{NEVER}")
}

/// Threads per workgroup along `dim`; CUDA's `blockDim`.
pub fn workgroup_dim(dim: usize) -> usize {
    let _ = dim;
    unreachable!("{NEVER}")
}

/// Workgroups in the launch along `dim`; CUDA's `gridDim`. In a launch split across
/// devices, the whole launch's count.
pub fn workgroup_count(dim: usize) -> usize {
    let _ = dim;
    unreachable!("{NEVER}")
}

/// A kernel's view of an `Atomic<T>` parameter: every thread may update any element with
/// these operations, which are atomic on the device. Each returns the element's previous
/// value; indices are bounds-checked. Integers (`i32`, `u32`, `i64`, `u64`) have them all;
/// the floats (`f32`, `f64`, `f16`, `bf16`) have `fetch_add` and `fetch_sub`, each sum
/// rounded to the type.
pub struct Atomic<T> {
    _element: PhantomData<T>,
}

macro_rules! atomic_ops {
    ($($(#[$doc:meta])* $name:ident),*) => {$(
        $(#[$doc])*
        pub fn $name(&self, index: usize, value: T) -> T {
            let _ = (index, value);
            unreachable!("{NEVER}")
        }
    )*};
}

impl<T> Atomic<T> {
    atomic_ops!(
        /// Adds `value` to element `index` (integers wrap).
        fetch_add,
        /// Subtracts `value` from element `index` (integers wrap).
        fetch_sub,
        /// Stores the smaller of element `index` and `value`. Integers only.
        fetch_min,
        /// Stores the larger of element `index` and `value`. Integers only.
        fetch_max,
        /// Bitwise-ands `value` into element `index`. Integers only.
        fetch_and,
        /// Bitwise-ors `value` into element `index`. Integers only.
        fetch_or,
        /// Bitwise-xors `value` into element `index`. Integers only.
        fetch_xor,
        /// Stores `value` in element `index`. Integers only.
        swap
    );

    /// Stores `new` if the element equals `current`; returns the previous value either way.
    pub fn compare_and_swap(&self, index: usize, current: T, new: T) -> T {
        let _ = (index, current, new);
        unreachable!("{NEVER}")
    }

    /// The number of elements.
    pub fn len(&self) -> usize {
        unreachable!("{NEVER}")
    }

    /// Whether there are no elements. The kernel translator does not accept this call
    /// yet (a compile error); compare `len()` with 0.
    pub fn is_empty(&self) -> bool {
        unreachable!("{NEVER}")
    }
}

/// Waits until every thread of the workgroup has reached this call (threads that have
/// returned do not count), and makes shared memory written before it visible after it.
/// CUDA's `__syncthreads()`.
///
/// Every thread of the workgroup must reach the same `sync_threads()` together: the
/// kernel translator refuses one that depends on a per-thread value (a thread index, a
/// region element, a loaded value) with a compile error.
pub fn sync_threads() {
    unreachable!("{NEVER}")
}

/// A per-workgroup array of `N` elements in shared (on-chip) memory, declared in a kernel
/// with `let mut tile = Shared::<f32, 256>::new();`. All threads of a workgroup see the
/// same array; each workgroup has its own. Slots no thread has written hold unspecified
/// values (any bit pattern of `T`).
///
/// Safe code cannot race on it. Threads read with `tile[i]` and write with `tile[i] = v`
/// (or `+=`...), [`write`](Self::write) (slot `rank`, the thread's
/// [`thread_rank`]) and [`write_nth`](Self::write_nth)`(k, v)` (slot
/// `k * threads_per_workgroup + rank`). Between two [`sync_threads`], a slot one thread
/// writes may not be touched by another: the kernel translator proves it, or refuses
/// the kernel pointing at the access. It proves slots apart when
/// - both are a thread's own: `write`, `write_nth`, `tile[thread_rank()]`, or
///   `tile[thread_rank() + c]` for one `c` all threads share;
/// - or one index is below a bound all threads share and the other at least that bound,
///   as in the tree reduction
///   `if t < s { tile[t] += tile[t + s]; } sync_threads(); s /= 2;`
///   with `t = thread_rank()` and `s` halved from `workgroup_dim(0) / 2`.
///
/// `thread_idx(0)` counts as the rank only after a check that the workgroup is
/// one-dimensional (`workgroup_dim(1) == 1` and `workgroup_dim(2) == 1`).
///
/// Indices are bounds-checked (a device panic). The raw `unsafe` [`load`](Self::load) and
/// [`store`](Self::store) reach any slot without the check on barriers.
pub struct Shared<T, const N: usize> {
    _element: PhantomData<T>,
}

/// A per-workgroup `ROWS × COLS` tile of shared memory, row-major, declared in a kernel
/// with `let mut tile = Shared2D::<f32, 16, 16>::new();`, with the rules of [`Shared`]:
/// [`write`](Self::write) writes the thread's own slot, thread (x, y) of the workgroup
/// filling `tile[(y, x)]` (the workgroup must be at most `COLS` threads wide, else the
/// write panics); any thread reads any slot with `tile[(r, c)]` (both bounds-checked).
///
/// `PAD` (0 unless given) more slots end each row in memory, unused: rows `COLS + PAD`
/// apart, so that threads reading down a column, or [`tile_mma`]'s warps, do not all hit
/// one memory bank (`Shared2D<bf16, 64, 64, 8>`).
pub struct Shared2D<T, const ROWS: usize, const COLS: usize, const PAD: usize = 0> {
    _element: PhantomData<T>,
}

impl<T: crate::Num, const ROWS: usize, const COLS: usize, const PAD: usize>
    Shared2D<T, ROWS, COLS, PAD>
{
    /// Declares the tile; once per kernel, at any point before its use.
    #[allow(clippy::new_without_default)]
    pub fn new() -> Self {
        unreachable!("{NEVER}")
    }

    /// Writes this thread's own slot: `(y, x)` for thread (x, y) of the workgroup.
    pub fn write(&mut self, value: T) {
        let _ = value;
        unreachable!("{NEVER}")
    }

    /// Writes this thread's own slot number `k * threads_per_workgroup + rank` of the
    /// tile, counted row by row, a padded row's `PAD` slots too ([`thread_rank`] is the
    /// rank): with `k` running from 0, a workgroup of any shape fills a tile of any
    /// shape, a row at a time.
    pub fn write_nth(&mut self, k: usize, value: T) {
        let _ = (k, value);
        unreachable!("{NEVER}")
    }

    /// Fills the tile, by the whole workgroup, with the `ROWS × COLS` block of `src` read
    /// as a row-major matrix of rows of `row_len` elements, whose top-left element is
    /// `(row, col)`: slot `(r, c)` gets `src[(row + r) * row_len + col + c]`, or zero
    /// where `col + c` is past the row's end or that index past the slice's. The usual
    /// way to stage a block of a matrix for [`tile_mma`].
    ///
    /// Like [`sync_threads`], every thread of the workgroup reaches it together, with the
    /// same `row_len`, `row` and `col` (a compile error otherwise), and it waits like a
    /// barrier before and after: no thread reads the tile while it is filled, and every
    /// thread sees the whole block after it.
    pub fn fill_from(&mut self, src: &[T], row_len: usize, row: usize, col: usize) {
        let _ = (src, row_len, row, col);
        unreachable!("{NEVER}")
    }

    /// `ROWS`.
    pub fn rows(&self) -> usize {
        unreachable!("{NEVER}")
    }

    /// `COLS`.
    pub fn cols(&self) -> usize {
        unreachable!("{NEVER}")
    }

    /// `ROWS * (COLS + PAD)`: the slots [`write_nth`](Self::write_nth) counts.
    pub fn len(&self) -> usize {
        unreachable!("{NEVER}")
    }

    /// Whether the tile has no elements (never: both extents are positive). The kernel
    /// translator does not accept this call; compare `len()` with 0.
    pub fn is_empty(&self) -> bool {
        unreachable!("{NEVER}")
    }
}

impl<T, const ROWS: usize, const COLS: usize, const PAD: usize> std::ops::Index<(usize, usize)>
    for Shared2D<T, ROWS, COLS, PAD>
{
    type Output = T;

    /// Reads any slot `(row, column)`; see [`Shared`]'s rules on barriers.
    fn index(&self, index: (usize, usize)) -> &T {
        let _ = index;
        unreachable!("{NEVER}")
    }
}

/// The launch's dynamic shared memory (`dyn_cache` bytes in `offload!`) as an array of
/// `dyn_cache / size_of::<T>()` elements, with the rules of [`Shared`]. A kernel declares
/// it with `let mut cache = DynShared::<f32>::new();`; several declarations view the
/// same memory.
pub struct DynShared<T> {
    _element: PhantomData<T>,
}

macro_rules! shared_api {
    () => {
        /// Declares the array; once per kernel, at any point before its use.
        #[allow(clippy::new_without_default)]
        pub fn new() -> Self {
            unreachable!("{NEVER}")
        }

        /// Writes this thread's own slot, `rank`.
        pub fn write(&mut self, value: T) {
            let _ = value;
            unreachable!("{NEVER}")
        }

        /// Writes this thread's `nth` own slot, `nth * threads_per_workgroup + rank`.
        pub fn write_nth(&mut self, nth: usize, value: T) {
            let _ = (nth, value);
            unreachable!("{NEVER}")
        }

        /// The number of elements.
        pub fn len(&self) -> usize {
            unreachable!("{NEVER}")
        }

        /// Whether the array has no elements. The kernel translator does not accept this
        /// call yet (a compile error); compare `len()` with 0.
        pub fn is_empty(&self) -> bool {
            unreachable!("{NEVER}")
        }

        /// Reads slot `index` (bounds-checked) with no barrier check.
        ///
        /// # Safety
        ///
        /// No other thread of the workgroup may write slot `index` between the barrier
        /// before this read and the barrier after it.
        pub unsafe fn load(&self, index: usize) -> T {
            let _ = index;
            unreachable!("{NEVER}")
        }

        /// Writes slot `index` (bounds-checked), which need not be this thread's own.
        ///
        /// # Safety
        ///
        /// No other thread of the workgroup may read or write slot `index` between the
        /// barrier before this write and the barrier after it.
        pub unsafe fn store(&mut self, index: usize, value: T) {
            let _ = (index, value);
            unreachable!("{NEVER}")
        }
    };
}

impl<T: crate::Num, const N: usize> Shared<T, N> {
    shared_api!();
}

impl<T: crate::Num> DynShared<T> {
    shared_api!();
}

impl<T, const N: usize> std::ops::Index<usize> for Shared<T, N> {
    type Output = T;

    /// Reads any slot; see the type's rules on barriers.
    fn index(&self, index: usize) -> &T {
        let _ = index;
        unreachable!("{NEVER}")
    }
}

impl<T> std::ops::Index<usize> for DynShared<T> {
    type Output = T;

    fn index(&self, index: usize) -> &T {
        let _ = index;
        unreachable!("{NEVER}")
    }
}

impl<T, const N: usize> std::ops::IndexMut<usize> for Shared<T, N> {
    /// Writes a slot; see the type's rules on which slots a thread may write.
    fn index_mut(&mut self, index: usize) -> &mut T {
        let _ = index;
        unreachable!("{NEVER}")
    }
}

impl<T> std::ops::IndexMut<usize> for DynShared<T> {
    fn index_mut(&mut self, index: usize) -> &mut T {
        let _ = index;
        unreachable!("{NEVER}")
    }
}

/// The elements [`tile_mma`] multiplies, and the accumulator's element for each: `f16`
/// and `bf16` into `f32` (on NVIDIA's tensor cores), `f32` into `f32` and `f64` into
/// `f64`.
pub trait MmaElement: crate::Float {
    /// The accumulator's element.
    type Acc: crate::Float;
}
impl MmaElement for half::f16 {
    type Acc = f32;
}
impl MmaElement for half::bf16 {
    type Acc = f32;
}
impl MmaElement for f32 {
    type Acc = f32;
}
impl MmaElement for f64 {
    type Acc = f64;
}

/// `acc += a × b` for the `M × K` tile `a` and the `K × N` tile `b`, by the whole
/// workgroup: on an NVIDIA GPU with `f16`/`bf16` tiles, on its tensor cores
/// (`ldmatrix` and `mma.sync.m16n8k16`, each warp taking 16 × 16 blocks of `acc`); in
/// loops elsewhere. `M`, `N` and `K` are multiples of 16; tiles of `f16`/`bf16` may be
/// padded by multiples of 8 (their rows start at 16-byte boundaries).
///
/// Like [`sync_threads`], every thread of the workgroup reaches it together (a compile
/// error otherwise), and it waits like a barrier before and after: what threads wrote to
/// the tiles before it is multiplied, and `acc` holds the sums after it. On a GPU the
/// workgroup is whole warps (an `Err` at launch otherwise). Each element of `acc` adds
/// the products (exact in the accumulator's type) in an order the target picks, so
/// results may differ from a sequential sum in the last bits.
#[allow(clippy::too_many_arguments)]
pub fn tile_mma<
    T: MmaElement,
    const M: usize,
    const N: usize,
    const K: usize,
    const PAD_ACC: usize,
    const PAD_A: usize,
    const PAD_B: usize,
>(
    acc: &mut Shared2D<T::Acc, M, N, PAD_ACC>,
    a: &Shared2D<T, M, K, PAD_A>,
    b: &Shared2D<T, K, N, PAD_B>,
) {
    let _ = (acc, a, b);
    unreachable!("{NEVER}")
}

/// Values subgroup operations exchange between lanes: 32- and 64-bit integers and floats.
pub trait LaneValue: crate::Num {}
impl LaneValue for i32 {}
impl LaneValue for u32 {}
impl LaneValue for i64 {}
impl LaneValue for u64 {}
impl LaneValue for f32 {}
impl LaneValue for f64 {}

/// Threads per subgroup: 32 on NVIDIA GPUs (a warp), 1 on the CPU backend, where every
/// thread is its own subgroup and the subgroup operations return the thread's own value.
///
/// A subgroup is the threads of a workgroup whose linear index (see [`Shared`]) divided
/// by the subgroup size is the same. Like [`sync_threads`], the operations below must be
/// reached by every thread of the workgroup together (a compile error otherwise), and on
/// a GPU a launch using them needs a workgroup size that is a multiple of the subgroup
/// size (an `Err` otherwise).
pub fn subgroup_size() -> usize {
    unreachable!("{NEVER}")
}

/// This thread's index in its subgroup.
pub fn subgroup_lane() -> usize {
    unreachable!("{NEVER}")
}

/// `value` as lane `lane` holds it; a lane past the subgroup gives the caller's own value.
pub fn subgroup_shuffle<T: LaneValue>(value: T, lane: usize) -> T {
    let _ = (value, lane);
    unreachable!("{NEVER}")
}

/// `value` from lane `subgroup_lane() ^ mask` (the caller's own past the subgroup).
pub fn subgroup_shuffle_xor<T: LaneValue>(value: T, mask: usize) -> T {
    let _ = (value, mask);
    unreachable!("{NEVER}")
}

/// `value` as lane `lane` holds it, for every lane; [`subgroup_shuffle`] with one lane.
pub fn subgroup_broadcast<T: LaneValue>(value: T, lane: usize) -> T {
    let _ = (value, lane);
    unreachable!("{NEVER}")
}

/// The sum of `value` over the workgroup, in every thread (integers wrap). Like
/// [`sync_threads`], every thread of the workgroup must reach it together; it is made of
/// subgroup operations, a barrier and shared memory (one slot per thread).
pub fn workgroup_sum<T: LaneValue>(value: T) -> T {
    let _ = value;
    unreachable!("{NEVER}")
}

/// The least `value` over the workgroup, in every thread (for floats, NaN only when every
/// value is NaN). See [`workgroup_sum`].
pub fn workgroup_min<T: LaneValue>(value: T) -> T {
    let _ = value;
    unreachable!("{NEVER}")
}

/// The greatest `value` over the workgroup, in every thread. See [`workgroup_sum`].
pub fn workgroup_max<T: LaneValue>(value: T) -> T {
    let _ = value;
    unreachable!("{NEVER}")
}

/// The sum of `value` over the subgroup, in every lane (integers wrap).
pub fn subgroup_sum<T: LaneValue>(value: T) -> T {
    let _ = value;
    unreachable!("{NEVER}")
}

/// The minimum of `value` over the subgroup, in every lane (floats as `f32::min`).
pub fn subgroup_min<T: LaneValue>(value: T) -> T {
    let _ = value;
    unreachable!("{NEVER}")
}

/// The maximum of `value` over the subgroup, in every lane (floats as `f32::max`).
pub fn subgroup_max<T: LaneValue>(value: T) -> T {
    let _ = value;
    unreachable!("{NEVER}")
}

/// A mask with bit `l` set where lane `l`'s `value` is true.
pub fn subgroup_ballot(value: bool) -> u64 {
    let _ = value;
    unreachable!("{NEVER}")
}

/// Whether `value` is true in any lane of the subgroup.
pub fn subgroup_any(value: bool) -> bool {
    let _ = value;
    unreachable!("{NEVER}")
}

/// Whether `value` is true in every lane of the subgroup.
pub fn subgroup_all(value: bool) -> bool {
    let _ = value;
    unreachable!("{NEVER}")
}
