//! `Region<T, S>`: data a kernel writes, shared out among threads by a partitioning
//! strategy so that no two threads can reach the same element.

use crate::{Error, scalar::Scalar};
use offload_mir::Strategy;
use std::marker::PhantomData;

/// A partitioning strategy: how a region's elements are shared out among threads.
pub trait PartitioningStrategy: Send + Sync + 'static {
    const KIND: Strategy;

    /// Refuses launch geometry under which two threads could reach the same element.
    /// `grid` is the number of workgroups and `block` the threads per workgroup.
    fn check_launch(len: usize, grid: [u32; 3], block: [u32; 3]) -> Result<(), Error>;

    /// The geometry used when the launch gives none: one thread per element in
    /// workgroups of `block` threads.
    fn default_geometry(len: usize, block: u32) -> ([u32; 3], [u32; 3]);
}

/// One element per thread: thread `t` of the launch owns element `t`; threads past the
/// end own nothing (`get_mut` gives `None`).
pub struct Linear1D;

impl PartitioningStrategy for Linear1D {
    const KIND: Strategy = Strategy::Linear1D;

    fn check_launch(len: usize, grid: [u32; 3], block: [u32; 3]) -> Result<(), Error> {
        // The owned element is the thread's x position alone: any thread in y or z would
        // share it with its x neighbour.
        if grid[1] != 1 || grid[2] != 1 || block[1] != 1 || block[2] != 1 {
            return Err(Error::InvalidLaunch(format!(
                "a `Linear1D` region needs a one-dimensional launch, got workgroup_dim {grid:?} and thread_dim {block:?}: \
                 threads that differ only in y or z would own the same element"
            )));
        }
        let threads = grid[0] as u64 * block[0] as u64;
        if threads < len as u64 {
            tracing::debug!(len, threads, "launch covers only part of a Linear1D region");
        }
        Ok(())
    }

    fn default_geometry(len: usize, block: u32) -> ([u32; 3], [u32; 3]) {
        let groups = len.div_ceil(block as usize).max(1);
        ([groups as u32, 1, 1], [block, 1, 1])
    }
}

/// Host data a kernel writes, lent to one launch. Not `Copy` or `Clone`: a region is the
/// only way to the data while the launch runs.
pub struct Region<'a, T, S> {
    pub(crate) data: &'a mut [T],
    _strategy: PhantomData<S>,
}

impl<'a, T: Scalar, S: PartitioningStrategy> Region<'a, T, S> {
    pub fn new(data: &'a mut [T]) -> Self {
        Region {
            data,
            _strategy: PhantomData,
        }
    }

    pub fn len(&self) -> usize {
        self.data.len()
    }

    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }
}

/// What a `Region` parameter of a launch accepts: `&mut [T]`, `&mut Vec<T>`, or a
/// `Region` itself.
pub trait IntoRegion<'a, T, S> {
    fn into_region(self) -> Region<'a, T, S>;
}

impl<'a, T: Scalar, S: PartitioningStrategy> IntoRegion<'a, T, S> for Region<'a, T, S> {
    fn into_region(self) -> Region<'a, T, S> {
        self
    }
}

impl<'a, T: Scalar, S: PartitioningStrategy> IntoRegion<'a, T, S> for &'a mut [T] {
    fn into_region(self) -> Region<'a, T, S> {
        Region::new(self)
    }
}

impl<'a, T: Scalar, S: PartitioningStrategy> IntoRegion<'a, T, S> for &'a mut Vec<T> {
    fn into_region(self) -> Region<'a, T, S> {
        Region::new(self.as_mut_slice())
    }
}

impl<'a, T: Scalar, S: PartitioningStrategy, const N: usize> IntoRegion<'a, T, S>
    for &'a mut [T; N]
{
    fn into_region(self) -> Region<'a, T, S> {
        Region::new(self.as_mut_slice())
    }
}
