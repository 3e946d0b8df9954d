//! The types a kernel body is type-checked against.
//!
//! `#[offload_kernel]` compiles the kernel's body a second time as an ordinary,
//! never-called Rust function whose `Region` parameters have the types here, so rustc
//! reports type errors in kernels with its usual precision. These functions never run:
//! kernels run as lowered code on a device or the CPU backend. Their bodies therefore
//! only describe the device-side meaning.

use std::marker::PhantomData;

/// A kernel's view of a `Region` parameter.
pub struct Region<T, S> {
    _element: PhantomData<T>,
    _strategy: PhantomData<S>,
}

impl<T, S> Region<T, S> {
    /// The element index this thread owns under the region's strategy.
    pub fn index(&self) -> usize {
        unreachable!("kernel bodies are type-checked on the host, never run there")
    }

    /// This thread's element, or `None` for threads past the end of the region.
    pub fn get_mut(&mut self) -> Option<&mut T> {
        unreachable!("kernel bodies are type-checked on the host, never run there")
    }

    /// The number of elements in the region.
    pub fn len(&self) -> usize {
        unreachable!("kernel bodies are type-checked on the host, never run there")
    }

    pub fn is_empty(&self) -> bool {
        unreachable!("kernel bodies are type-checked on the host, never run there")
    }
}
