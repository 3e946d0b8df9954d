//! Named ranges of a program's time for profilers: `let _step = offload::range("step");`
//! opens an NVTX range on the calling thread that ends when the guard is dropped, so
//! Nsight Systems shows the program's phases above the kernels and copies they issued.
//!
//! NVTX's version 3 API is compiled in (the `nvtx` crate): when no profiler has injected
//! its NVTX library into the process, opening and closing a range costs a check of a
//! function pointer and does nothing else.

/// An open NVTX range, ended when dropped. It belongs to the thread that opened it (NVTX
/// nests a thread's ranges), so it is neither `Send` nor `Sync`.
#[must_use = "the range ends when this guard is dropped"]
pub struct Range {
    _open: nvtx::LocalRange,
}

/// Opens a range named `name` on this thread, shown by profilers (Nsight Systems) until
/// the guard is dropped. Ranges nest. A NUL in `name` is left out.
pub fn range(name: &str) -> Range {
    Range {
        _open: nvtx::LocalRange::new(nvtx::Str::from_str_lossy(name)),
    }
}

impl std::fmt::Debug for Range {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Range")
    }
}
