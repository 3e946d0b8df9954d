//! `offload-noalias-kernel-args`: marks the data pointer of every memref argument of a GPU
//! kernel `noalias`. Rust guarantees it: a launch's regions are exclusive borrows, its
//! slices shared borrows no region overlaps, device buffers the same, and the panic buffer
//! is the launch's own. LLVM then knows a slice the kernel only reads is read-only for
//! the whole launch, and NVPTX loads it through the read-only data cache (`ld.global.nc`),
//! which CUDA C++ gets only from `__restrict__`.
//!
//! A memref argument arrives as its descriptor's words: the allocated pointer, the data
//! (aligned) pointer, then integers. Only the data pointer is read and written through,
//! so only it is marked.

use crate::rewrite::{self, PassError};
use melior::{Context, ir::OperationRef};

pub const NAME: &str = "offload-noalias-kernel-args";

pub fn run(context: &Context, root: OperationRef<'_, '_>) -> Result<(), PassError> {
    for func in rewrite::collect(root, "llvm.func") {
        // SAFETY: `func` was collected from the live module; only its attributes change.
        unsafe {
            if !rewrite::has_attribute(func, "nvvm.kernel") {
                continue;
            }
            let types: Vec<String> = rewrite::arguments(rewrite::entry_block(func))
                .into_iter()
                .map(|a| rewrite::value_type(a).to_string())
                .collect();
            let pointer = |i: usize| types.get(i).is_some_and(|t| t.starts_with("!llvm.ptr"));
            let mut attrs = vec!["{}"; types.len()];
            let mut i = 0;
            while i < types.len() {
                if pointer(i) && pointer(i + 1) {
                    attrs[i + 1] = "{llvm.noalias}";
                    i += 2;
                } else {
                    i += 1;
                }
            }
            let list = melior::ir::Attribute::parse(context, &format!("[{}]", attrs.join(", ")))
                .ok_or_else(|| rewrite::refuse(func, "cannot form the argument attributes"))?;
            rewrite::set_attribute(func, "arg_attrs", list);
        }
    }
    Ok(())
}
