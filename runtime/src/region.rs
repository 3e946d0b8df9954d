//! `Region<T, S>`: data a kernel works on, shared out among threads by a partitioning
//! strategy so that no two threads can reach the same element.

use crate::{Error, memory::BufferLocation, scalar::Scalar};
use offload_mir::{Param, Strategy};
use std::{marker::PhantomData, ptr::NonNull};

/// Threads per workgroup when a launch does not say.
pub const DEFAULT_WORKGROUP_SIZE: u32 = 256;

/// The most threads one workgroup may have.
pub const MAX_WORKGROUP_SIZE: u64 = offload_mir::abi::MAX_WORKGROUP_THREADS as u64;

/// A region's shape: `len` elements, in rows of `row_len` for the 2-D and 3-D
/// strategies and planes of `plane_rows` rows for `Linear3D`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Shape {
    /// Elements in the region, all rows together.
    pub len: usize,
    /// Elements per row for the 2-D and 3-D strategies; `None` for a 1-D region.
    pub row_len: Option<usize>,
    /// Rows per plane for `Linear3D`; `None` otherwise.
    pub plane_rows: Option<usize>,
    /// An interior region's margin ([`Region::interior`]): its threads own the elements
    /// at least this far from every edge. 0 for a whole region.
    pub margin: usize,
    /// The number of indices of an `Indexed` region: the threads that own an element.
    pub indices: Option<usize>,
}

impl Shape {
    /// A one-dimensional region of `len` elements.
    pub fn flat(len: usize) -> Shape {
        Shape {
            len,
            row_len: None,
            plane_rows: None,
            margin: 0,
            indices: None,
        }
    }

    /// (row length, rows per plane, planes): a 1-D region is one row, a 2-D region one
    /// plane. Only meaningful for a shape that [`PartitioningStrategy::check_launch`]
    /// accepts.
    pub fn extents(self) -> [usize; 3] {
        let w = self.row_len.filter(|&w| w > 0).unwrap_or(self.len.max(1));
        let h = self.plane_rows.filter(|&h| h > 0).unwrap_or(self.len / w);
        [w, h, self.len / w.saturating_mul(h).max(1)]
    }
}

mod sealed {
    /// Only this crate's strategies exist: each one's `check_launch` is part of the
    /// safety argument, so a user strategy could break it.
    pub trait Sealed {}
    impl Sealed for super::Linear1D {}
    impl Sealed for super::Linear2D {}
    impl<const N: usize> Sealed for super::Chunked<N> {}
    impl<const R: usize> Sealed for super::Stencil2D<R> {}
    impl Sealed for super::Linear3D {}
    impl Sealed for super::Indexed {}
}

/// A partitioning strategy: how a region's elements are shared out among threads.
/// Sealed: the strategies are [`Linear1D`], [`Linear2D`], [`Linear3D`], [`Chunked`],
/// [`Stencil2D`] and [`Indexed`].
pub trait PartitioningStrategy: sealed::Sealed + Send + Sync + 'static {
    /// The strategy as the kernel's MIR names it, which a launch checks the argument
    /// against.
    #[doc(hidden)]
    const KIND: Strategy;

    /// Refuses launch geometry (and region shapes) under which two threads could reach
    /// the same element, or the kernel could not address the region. `workgroups` is the number
    /// of workgroups and `workgroup_size` the threads per workgroup.
    fn check_launch(
        shape: Shape,
        workgroups: [u32; 3],
        workgroup_size: [u32; 3],
    ) -> Result<(), Error> {
        check_launch(Self::KIND, shape, workgroups, workgroup_size)
    }

    /// The geometry used when a launch gives no `workgroup_dim`: enough workgroups of
    /// `workgroup_size` threads (or this strategy's default size) to cover the region.
    fn default_geometry(
        shape: Shape,
        workgroup_size: Option<[u32; 3]>,
    ) -> Result<([u32; 3], [u32; 3]), Error> {
        default_geometry(Self::KIND, shape, workgroup_size)
    }
}

/// [`PartitioningStrategy::check_launch`] for a strategy known at run time.
pub(crate) fn check_launch(
    strategy: Strategy,
    shape: Shape,
    workgroups: [u32; 3],
    workgroup_size: [u32; 3],
) -> Result<(), Error> {
    match strategy {
        Strategy::Linear1D => one_dimensional("Linear1D", workgroups, workgroup_size),
        Strategy::Indexed => one_dimensional("Indexed", workgroups, workgroup_size),
        Strategy::Linear2D | Strategy::Stencil2D(_) | Strategy::Linear3D => {
            check_layout(strategy, shape)?;
            if strategy.rank() == 2 && (workgroups[2] != 1 || workgroup_size[2] != 1) {
                return Err(Error::InvalidLaunch(format!(
                    "a `{strategy}` region needs a launch without z, got workgroup_dim {workgroups:?} and thread_dim {workgroup_size:?}: \
                     threads that differ only in z would own the same element"
                )));
            }
            Ok(())
        }
        Strategy::Chunked(n) => {
            let n = n.number();
            if n == 0 {
                return Err(Error::InvalidLaunch(
                    "`Chunked<0>` needs 1 to 2^32 - 1 elements per thread".into(),
                ));
            }
            one_dimensional(&format!("Chunked<{n}>"), workgroups, workgroup_size)?;
            // Thread `t`'s chunk starts at `t * N`, computed in 64 bits on the device: it
            // must not wrap for any thread, or two threads would own one chunk.
            let threads = workgroups[0] as u64 * workgroup_size[0] as u64;
            if threads
                .checked_mul(n as u64)
                .is_none_or(|e| e > isize::MAX as u64)
            {
                return Err(Error::InvalidLaunch(format!(
                    "{threads} threads of `Chunked<{n}>` would address more elements than fit in memory"
                )));
            }
            Ok(())
        }
    }
}

/// [`PartitioningStrategy::default_geometry`] for a strategy known at run time.
pub(crate) fn default_geometry(
    strategy: Strategy,
    shape: Shape,
    workgroup_size: Option<[u32; 3]>,
) -> Result<([u32; 3], [u32; 3]), Error> {
    match strategy {
        Strategy::Linear1D => {
            let workgroup_size = workgroup_size.unwrap_or([DEFAULT_WORKGROUP_SIZE, 1, 1]);
            Ok((
                [groups(shape.len, workgroup_size[0])?, 1, 1],
                workgroup_size,
            ))
        }
        Strategy::Chunked(n) => {
            let workgroup_size = workgroup_size.unwrap_or([DEFAULT_WORKGROUP_SIZE, 1, 1]);
            let chunks = shape.len.div_ceil(n.number().max(1) as usize);
            Ok(([groups(chunks, workgroup_size[0])?, 1, 1], workgroup_size))
        }
        Strategy::Indexed => {
            let workgroup_size = workgroup_size.unwrap_or([DEFAULT_WORKGROUP_SIZE, 1, 1]);
            let threads = shape.indices.unwrap_or(0);
            Ok(([groups(threads, workgroup_size[0])?, 1, 1], workgroup_size))
        }
        Strategy::Linear2D | Strategy::Stencil2D(_) | Strategy::Linear3D => {
            let default = if strategy.rank() == 3 {
                [32, 4, 2]
            } else {
                [16, 16, 1]
            };
            let workgroup_size = workgroup_size.unwrap_or(default);
            // Threads for the interior only: an interior region's first thread is at its
            // margin.
            let threads = shape
                .extents()
                .map(|e| e.saturating_sub(shape.margin.saturating_mul(2)));
            let mut workgroups = [1; 3];
            for d in 0..strategy.rank() as usize {
                workgroups[d] = groups(threads[d], workgroup_size[d])?;
            }
            Ok((workgroups, workgroup_size))
        }
    }
}

fn groups(items: usize, per_group: u32) -> Result<u32, Error> {
    u32::try_from(items.div_ceil(per_group as usize).max(1)).map_err(|_| {
        Error::InvalidLaunch(format!("{items} threads need more than 2^32 workgroups"))
    })
}

fn one_dimensional(
    name: &str,
    workgroups: [u32; 3],
    workgroup_size: [u32; 3],
) -> Result<(), Error> {
    if workgroups[1] != 1 || workgroups[2] != 1 || workgroup_size[1] != 1 || workgroup_size[2] != 1
    {
        return Err(Error::InvalidLaunch(format!(
            "a `{name}` region needs a one-dimensional launch, got workgroup_dim {workgroups:?} and thread_dim {workgroup_size:?}: \
             threads that differ only in y or z would own the same element"
        )));
    }
    Ok(())
}

/// Refuses a multi-dimensional region whose shape does not lay its elements out in whole
/// rows (and planes), or whose margin leaves no interior. Checked before a launch's
/// geometry is derived from the shape.
pub(crate) fn check_layout(strategy: Strategy, shape: Shape) -> Result<(), Error> {
    let rank = strategy.rank();
    if rank == 1 {
        return Ok(());
    }
    if rank == 2 && shape.plane_rows.is_some() {
        return Err(Error::InvalidLaunch(format!(
            "a `{strategy}` region has rows, not planes: build it with `Region::new_2d`"
        )));
    }
    let plane = match (shape.row_len, shape.plane_rows, rank) {
        (Some(w), _, 2) => Some(w),
        (Some(w), Some(h), 3) => w.checked_mul(h),
        (None, _, 2) => {
            return Err(Error::InvalidLaunch(format!(
                "a `{strategy}` region needs a row length: build it with `Region::new_2d`"
            )));
        }
        _ => {
            return Err(Error::InvalidLaunch(format!(
                "a `{strategy}` region needs a row length and rows per plane: build it with `Region::new_3d`"
            )));
        }
    };
    match plane {
        Some(p) if p > 0 && shape.len.is_multiple_of(p) => {}
        _ if rank == 2 => {
            return Err(Error::InvalidLaunch(format!(
                "a `{strategy}` region of {} elements cannot be laid out in rows of {}",
                shape.len,
                shape.row_len.unwrap_or(0)
            )));
        }
        _ => {
            return Err(Error::InvalidLaunch(format!(
                "a `{strategy}` region of {} elements cannot be laid out in planes of {} rows of {}",
                shape.len,
                shape.plane_rows.unwrap_or(0),
                shape.row_len.unwrap_or(0)
            )));
        }
    }
    let extents = shape.extents();
    if let Some(e) = extents[..rank as usize]
        .iter()
        .find(|&&e| shape.margin > e / 2)
    {
        return Err(Error::InvalidLaunch(format!(
            "`interior({})` of a `{strategy}` region with an extent of {e} leaves no interior",
            shape.margin
        )));
    }
    Ok(())
}

/// Checks an `Indexed` region's indices against its data's length: each in bounds and
/// none twice, so that every thread owns a distinct element.
pub(crate) fn check_indices(indices: &[usize], len: usize) -> Result<(), Error> {
    let mut seen = fixedbitset::FixedBitSet::with_capacity(len);
    for (t, &i) in indices.iter().enumerate() {
        if i >= len {
            return Err(Error::InvalidLaunch(format!(
                "index {t} of an `Indexed` region is {i}, out of bounds for its {len} elements"
            )));
        }
        if seen.put(i) {
            let first = indices.iter().position(|&j| j == i).unwrap_or(t);
            return Err(Error::InvalidLaunch(format!(
                "indices {first} and {t} of an `Indexed` region are both {i}: two threads would own one element"
            )));
        }
    }
    Ok(())
}

/// One element per thread: thread `t` of the launch owns element `t`; threads past the
/// end own nothing (`get_mut` gives `None`).
pub struct Linear1D;

impl PartitioningStrategy for Linear1D {
    const KIND: Strategy = Strategy::Linear1D;
}

/// A row-major 2-D region: the thread at (x, y) of the launch owns the element in row y,
/// column x (`region.row()`, `region.col()`).
pub struct Linear2D;

impl PartitioningStrategy for Linear2D {
    const KIND: Strategy = Strategy::Linear2D;
}

/// `N` contiguous elements per thread: thread `t` owns elements `t * N .. t * N + N`
/// (fewer at the end); `get_mut` gives them as a chunk to index.
pub struct Chunked<const N: usize>;

impl<const N: usize> PartitioningStrategy for Chunked<N> {
    // A constant-evaluation error for `N` past `u32::MAX` (a compile error where used).
    const KIND: Strategy = Strategy::Chunked(Param::Value(chunk_len(N)));
}

const fn chunk_len(n: usize) -> u32 {
    assert!(
        n > 0 && n <= u32::MAX as usize,
        "`Chunked<N>` needs 1 to 2^32 - 1 elements per thread"
    );
    n as u32
}

/// A row-major 3-D region, x fastest: the thread at (x, y, z) of the launch owns the
/// element in plane z, row y, column x (`region.x()`, `y()`, `z()`). Build it with
/// [`Region::new_3d`].
pub struct Linear3D;

impl PartitioningStrategy for Linear3D {
    const KIND: Strategy = Strategy::Linear3D;
}

/// A scatter: thread `t` owns element `indices[t]` of the data
/// ([`Region::indexed`]). A launch refuses indices out of bounds or repeated, so no two
/// threads own one element.
pub struct Indexed;

impl PartitioningStrategy for Indexed {
    const KIND: Strategy = Strategy::Indexed;
}

/// A read-only 2-D region: the thread at (x, y) reads the neighbourhood of radius `R`
/// around row y, column x, with `get(dr, dc)` (`None` past the edges) or
/// `get_clamped(dr, dc)` (the nearest edge element). Never copied back.
pub struct Stencil2D<const R: usize>;

impl<const R: usize> PartitioningStrategy for Stencil2D<R> {
    const KIND: Strategy = Strategy::Stencil2D(Param::Value(R as u32));
}

/// Host data lent to one launch. Not `Copy` or `Clone`: while the launch runs, a region
/// is the only way to its data.
pub struct Region<'a, T, S> {
    pub(crate) data: NonNull<T>,
    pub(crate) shape: Shape,
    /// Set when the data is a device-resident buffer, which launches use in place.
    pub(crate) resident: Option<BufferLocation>,
    /// An `Indexed` region's indices.
    pub(crate) indices: Option<&'a [usize]>,
    _borrow: PhantomData<&'a mut [T]>,
    _strategy: PhantomData<S>,
}

impl<'a, T: Scalar, S: PartitioningStrategy> Region<'a, T, S> {
    /// A 1-D region over `data` (`Linear1D`, `Chunked<N>`).
    pub fn new(data: &'a mut [T]) -> Self {
        Self::from_parts(data.into(), Shape::flat(data.len()))
    }

    /// A 2-D region over `data` laid out in rows of `row_len` elements (`Linear2D`). A
    /// length that is not a whole number of rows is refused when the region is launched.
    pub fn new_2d(data: &'a mut [T], row_len: usize) -> Self {
        Self::from_parts(
            data.into(),
            Shape {
                row_len: Some(row_len),
                ..Shape::flat(data.len())
            },
        )
    }

    pub(crate) fn from_parts(data: NonNull<[T]>, shape: Shape) -> Self {
        Region {
            data: data.cast(),
            shape,
            resident: None,
            indices: None,
            _borrow: PhantomData,
            _strategy: PhantomData,
        }
    }

    /// The number of elements, all rows of a 2-D region together.
    pub fn len(&self) -> usize {
        self.shape.len
    }

    /// Whether the region has no elements.
    pub fn is_empty(&self) -> bool {
        self.shape.len == 0
    }
}

impl<'a, T: Scalar, S: PartitioningStrategy> Region<'a, T, S> {
    /// A region of `shape` over device-resident data, used where it lives.
    pub(crate) fn resident(shape: Shape, resident: BufferLocation) -> Self {
        Region {
            data: NonNull::dangling(),
            shape,
            resident: Some(resident),
            indices: None,
            _borrow: PhantomData,
            _strategy: PhantomData,
        }
    }
}

impl<'a, T: Scalar, S: MultiDimensional> Region<'a, T, S> {
    /// The region's interior: the elements at least `margin` from every edge of a 2-D or
    /// 3-D region. Threads map to interior elements only (the first thread owns the
    /// element at (`margin`, `margin`)); coordinates and extents stay those of the whole
    /// region, so `row()` and `col()` index it as before. A margin that leaves no interior
    /// is refused when the region is launched.
    pub fn interior(mut self, margin: usize) -> Self {
        self.shape.margin = margin;
        self
    }
}

impl<'a, T: Scalar, const R: usize> Region<'a, T, Stencil2D<R>> {
    /// A read-only stencil region over `data` in rows of `row_len` elements.
    pub fn stencil(data: &'a [T], row_len: usize) -> Self {
        // The pointer is never written through: `Stencil2D` regions are not writable in
        // kernels and are never copied back.
        Self::from_parts(
            NonNull::from(data),
            Shape {
                row_len: Some(row_len),
                ..Shape::flat(data.len())
            },
        )
    }
}

impl<'a, T: Scalar> Region<'a, T, Linear3D> {
    /// A 3-D region over `data` (`Linear3D`), x fastest: rows of `nx` elements, planes of
    /// `ny` rows, as many planes as the data holds. A length that is not a whole number of
    /// planes is refused when the region is launched.
    pub fn new_3d(data: &'a mut [T], nx: usize, ny: usize) -> Self {
        Self::from_parts(
            data.into(),
            Shape {
                row_len: Some(nx),
                plane_rows: Some(ny),
                ..Shape::flat(data.len())
            },
        )
    }
}

impl<'a, T: Scalar> Region<'a, T, Indexed> {
    /// A scatter over `data`: thread `t` owns `data[indices[t]]` (through `get_mut()`), and
    /// the launch has a thread per index. A launch refuses indices that are out of bounds
    /// or repeated.
    pub fn indexed(data: &'a mut [T], indices: &'a [usize]) -> Self {
        let mut region = Self::from_parts(
            data.into(),
            Shape {
                indices: Some(indices.len()),
                ..Shape::flat(data.len())
            },
        );
        region.indices = Some(indices);
        region
    }
}

/// What a `Region` parameter of a launch accepts: a `Region`, or for one-dimensional
/// strategies `&mut [T]`, `&mut Vec<T>` and `&mut [T; N]`.
#[diagnostic::on_unimplemented(
    message = "a `Region<{T}, {S}>` parameter cannot be given a `{Self}`",
    label = "pass the data by mutable reference (`&mut data`)",
    note = "a region parameter takes `&mut Vec<{T}>`, `&mut [{T}]`, `&mut [{T}; N]` or a `Region` (`Region::new_2d(&mut y, width)` for two-dimensional strategies); the kernel writes the caller's data in place"
)]
pub trait IntoRegion<'a, T, S> {
    /// The region the launch passes; the launch calls this.
    fn into_region(self) -> Region<'a, T, S>;
}

/// The strategies of 2-D and 3-D regions, which have an interior.
pub trait MultiDimensional: PartitioningStrategy {}
impl MultiDimensional for Linear2D {}
impl MultiDimensional for Linear3D {}
impl<const R: usize> MultiDimensional for Stencil2D<R> {}

/// Strategies whose regions can be made from a plain mutable slice.
pub trait OneDimensional: PartitioningStrategy {}
impl OneDimensional for Linear1D {}
impl<const N: usize> OneDimensional for Chunked<N> {}

impl<'a, T: Scalar, S: PartitioningStrategy> IntoRegion<'a, T, S> for Region<'a, T, S> {
    fn into_region(self) -> Region<'a, T, S> {
        self
    }
}

impl<'a, T: Scalar, S: OneDimensional> IntoRegion<'a, T, S> for &'a mut [T] {
    fn into_region(self) -> Region<'a, T, S> {
        Region::new(self)
    }
}

impl<'a, T: Scalar, S: OneDimensional> IntoRegion<'a, T, S> for &'a mut Vec<T> {
    fn into_region(self) -> Region<'a, T, S> {
        Region::new(self.as_mut_slice())
    }
}

impl<'a, T: Scalar, S: OneDimensional, const N: usize> IntoRegion<'a, T, S> for &'a mut [T; N] {
    fn into_region(self) -> Region<'a, T, S> {
        Region::new(self.as_mut_slice())
    }
}

/// The data behind an atomic argument: host memory, or a device-resident buffer.
pub struct AtomicData<'a, T> {
    pub(crate) host: &'a mut [T],
    pub(crate) resident: Option<BufferLocation>,
}

/// What an `Atomic<T>` parameter of a launch accepts: data every thread may update with
/// atomic operations, copied to the device and back like a region (`&mut [T]`,
/// `&mut Vec<T>`, `&mut [T; N]`), or a `&mut DeviceBuffer<T>` updated where it lives.
#[diagnostic::on_unimplemented(
    message = "an `Atomic<{T}>` parameter cannot be given a `{Self}`",
    label = "pass the data by mutable reference (`&mut data`)",
    note = "an atomic parameter takes `&mut Vec<{T}>`, `&mut [{T}]`, `&mut [{T}; N]` or `&mut DeviceBuffer<{T}>`"
)]
pub trait IntoAtomic<'a, T> {
    /// The elements the kernel's threads update; the launch calls this.
    fn into_atomic(self) -> AtomicData<'a, T>;
}

impl<'a, T: Scalar> IntoAtomic<'a, T> for &'a mut [T] {
    fn into_atomic(self) -> AtomicData<'a, T> {
        AtomicData {
            host: self,
            resident: None,
        }
    }
}

impl<'a, T: Scalar> IntoAtomic<'a, T> for &'a mut Vec<T> {
    fn into_atomic(self) -> AtomicData<'a, T> {
        self.as_mut_slice().into_atomic()
    }
}

impl<'a, T: Scalar, const N: usize> IntoAtomic<'a, T> for &'a mut [T; N] {
    fn into_atomic(self) -> AtomicData<'a, T> {
        self.as_mut_slice().into_atomic()
    }
}

/// The data behind a slice argument: host memory, or a device-resident buffer.
pub struct SliceData<'a, T> {
    pub(crate) host: &'a [T],
    pub(crate) resident: Option<BufferLocation>,
}

/// What a slice (`&[T]`) parameter of a launch accepts: `&[T]`, `&Vec<T>`, `&[T; N]`, or
/// a `&DeviceBuffer<T>` used where it lives.
#[diagnostic::on_unimplemented(
    message = "a `&[{T}]` parameter cannot be given a `{Self}`",
    label = "pass the data by reference (`&data`)",
    note = "a slice parameter takes `&Vec<{T}>`, `&[{T}]`, `&[{T}; N]` or `&DeviceBuffer<{T}>`"
)]
pub trait IntoSlice<'a, T> {
    /// The data the launch passes; the launch calls this.
    fn into_slice(self) -> SliceData<'a, T>;
}

impl<'a, T: Scalar> IntoSlice<'a, T> for &'a [T] {
    fn into_slice(self) -> SliceData<'a, T> {
        SliceData {
            host: self,
            resident: None,
        }
    }
}

impl<'a, T: Scalar> IntoSlice<'a, T> for &'a Vec<T> {
    fn into_slice(self) -> SliceData<'a, T> {
        SliceData {
            host: self.as_slice(),
            resident: None,
        }
    }
}

impl<'a, T: Scalar, const N: usize> IntoSlice<'a, T> for &'a [T; N] {
    fn into_slice(self) -> SliceData<'a, T> {
        SliceData {
            host: self.as_slice(),
            resident: None,
        }
    }
}
