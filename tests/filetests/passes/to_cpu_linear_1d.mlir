// pipeline: builtin.module(convert-offload-to-cpu)
// The host function: the leading arguments (workgroups, sizes, the shared block), then
// the loops over a share of workgroups and over z, y and x.
// CHECK: func.func @saxpy(%arg0: index, %arg1: index, %arg2: index, %arg3: index, %arg4: index, %arg5: index, %arg6: index, %arg7: index, %arg8: memref<?xi8>
// CHECK: = %arg0 to %arg1 step %c1 iter_args
// CHECK-NEXT: to %arg7 step %c1
// CHECK: to %arg6 step %c1
// CHECK: to %arg5 step %c1
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

