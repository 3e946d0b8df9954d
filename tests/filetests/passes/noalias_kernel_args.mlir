// pipeline: builtin.module(offload-noalias-kernel-args)
// A kernel's memref descriptors (allocated pointer, data pointer, integers) get
// `llvm.noalias` on the data pointer only; a scalar, and a function that is not a
// kernel, are left alone.
module {
  llvm.func @k(%a0: !llvm.ptr, %a1: !llvm.ptr, %a2: i64, %a3: i64, %a4: i64, %s: f32, %b0: !llvm.ptr, %b1: !llvm.ptr, %b2: i64, %b3: i64, %b4: i64) attributes {nvvm.kernel} {
    llvm.return
  }
  llvm.func @helper(%p0: !llvm.ptr, %p1: !llvm.ptr) {
    llvm.return
  }
}
