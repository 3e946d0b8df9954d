// pipeline: builtin.module(convert-offload-to-gpu)
// A kernel in a gpu.module: its ABI arguments, the panic buffer, the hidden words; the
// workgroup index offset by the group base; each panic report ends in `exit`.
// CHECK: gpu.module @saxpy_module
// CHECK-NEXT: gpu.func @saxpy(%arg0: memref<?xf32>, %arg1: memref<?xf32>, %arg2: f32, %arg3: memref<?xi64>, %arg4: index, %arg5: index, %arg6: index, %arg7: index, %arg8: index, %arg9: index, %arg10: index) kernel
// CHECK-NEXT: gpu.thread_id  x
// CHECK-NEXT: gpu.block_id  x
// CHECK-NEXT: arith.addi %block_id_x, %arg4 : index
// CHECK: llvm.inline_asm has_side_effects "// offload panic site 0"
// CHECK-NEXT: llvm.inline_asm has_side_effects "exit;"
// CHECK-NOT: offload.
module {
  func.func @saxpy(%arg0: !offload.region<f32, "Linear1D">, %arg1: !offload.slice<f32>, %arg2: f32) attributes {offload.kernel} {
    %0 = "offload.thread_id"() {dim = 0 : i64} : () -> index
    %1 = "offload.workgroup_id"() {dim = 0 : i64} : () -> index
    %2 = "offload.workgroup_dim"() {dim = 0 : i64} : () -> index
    %3 = arith.muli %1, %2 : index
    %4 = arith.addi %3, %0 : index
    %5 = arith.index_cast %4 : index to i64
    %6 = "offload.thread_id"() {dim = 0 : i64} : () -> index
    %7 = "offload.workgroup_id"() {dim = 0 : i64} : () -> index
    %8 = "offload.workgroup_dim"() {dim = 0 : i64} : () -> index
    %9 = arith.muli %7, %8 : index
    %10 = arith.addi %9, %6 : index
    %11 = arith.index_cast %10 : index to i64
    %12 = "offload.len"(%arg0) : (!offload.region<f32, "Linear1D">) -> index
    %13 = arith.index_cast %12 : index to i64
    %14 = arith.cmpi ult, %11, %13 : i64
    cf.cond_br %14, ^bb1, ^bb2
  ^bb1:  // pred: ^bb0
    %15 = "offload.len"(%arg1) : (!offload.slice<f32>) -> index
    %16 = arith.index_cast %15 : index to i64
    %17 = arith.cmpi ult, %5, %16 : i64
    cf.cond_br %17, ^bb3, ^bb4
  ^bb2:  // 2 preds: ^bb0, ^bb3
    return
  ^bb3:  // pred: ^bb1
    %18 = "offload.load"(%arg1, %4) : (!offload.slice<f32>, index) -> f32
    %19 = arith.mulf %arg2, %18 : f32
    %20 = "offload.load"(%arg0, %10) : (!offload.region<f32, "Linear1D">, index) -> f32
    %21 = arith.addf %19, %20 : f32
    "offload.store"(%21, %arg0, %10) : (f32, !offload.region<f32, "Linear1D">, index) -> ()
    cf.br ^bb2
  ^bb4:  // pred: ^bb1
    "offload.panic"(%16, %5) {site = 0 : i64} : (i64, i64) -> ()
    return
  }
}

