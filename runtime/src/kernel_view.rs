//! The types a kernel body is type-checked against.
//!
//! `#[offload_kernel]` compiles the kernel's body a second time as an ordinary,
//! never-called Rust function whose `Region` parameters have the types here, so rustc
//! reports type errors in kernels with its usual precision. These functions never run:
//! kernels run as lowered code on a device or the CPU backend. Their docs describe the
//! device-side meaning.

use crate::{Chunked, Linear1D, Linear2D, Stencil2D};
use std::marker::PhantomData;

/// A kernel's view of a `Region` parameter.
pub struct Region<T, S> {
    _element: PhantomData<T>,
    _strategy: PhantomData<S>,
}

const NEVER: &str = "kernel bodies are type-checked on the host, never run there";

impl<T, S> Region<T, S> {
    /// The (first) element index this thread owns under the region's strategy.
    pub fn index(&self) -> usize {
        unreachable!("{NEVER}")
    }

    /// The number of elements in the region.
    pub fn len(&self) -> usize {
        unreachable!("{NEVER}")
    }

    pub fn is_empty(&self) -> bool {
        unreachable!("{NEVER}")
    }
}

/// Row and column queries of the 2-D strategies.
macro_rules! coordinates {
    () => {
        /// This thread's row.
        pub fn row(&self) -> usize {
            unreachable!("{NEVER}")
        }

        /// This thread's column.
        pub fn col(&self) -> usize {
            unreachable!("{NEVER}")
        }

        /// Elements per row.
        pub fn width(&self) -> usize {
            unreachable!("{NEVER}")
        }

        /// Rows.
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

/// A kernel's view of an `Atomic<T>` parameter: every thread may update any element with
/// these operations, which are atomic on the device. Each returns the element's previous
/// value; indices are bounds-checked. Integers (`i32`, `u32`, `i64`, `u64`) have them all;
/// `f32` and `f64` have `fetch_add` and `fetch_sub`.
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
        fetch_add, fetch_sub, fetch_min, fetch_max, fetch_and, fetch_or, fetch_xor, swap
    );

    /// Stores `new` if the element equals `current`; returns the previous value either way.
    pub fn compare_and_swap(&self, index: usize, current: T, new: T) -> T {
        let _ = (index, current, new);
        unreachable!("{NEVER}")
    }

    pub fn len(&self) -> usize {
        unreachable!("{NEVER}")
    }

    pub fn is_empty(&self) -> bool {
        unreachable!("{NEVER}")
    }
}
