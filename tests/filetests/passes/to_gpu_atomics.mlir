// pipeline: builtin.module(convert-offload-to-gpu)
// Atomic updates become memref.atomic_rmw on the argument's memref.
// CHECK: gpu.func @histogram
// CHECK: memref.atomic_rmw addi %c1_i32, %arg0
// CHECK-NOT: offload.
module {
  func.func @histogram(%arg0: !offload.atomic<i32>, %arg1: !offload.slice<f32>, %arg2: !offload.region<i8, "Linear1D">) attributes {offload.kernel} {
    %c1_i8 = arith.constant 1 : i8
    %c1_i32 = arith.constant 1 : i32
    %c63_i64 = arith.constant 63 : i64
    %c0_i64 = arith.constant 0 : i64
    %c-1_i64 = arith.constant -1 : i64
    %cst = arith.constant 1.84467441E+19 : f32
    %cst_0 = arith.constant 0.000000e+00 : f32
    %cst_1 = arith.constant 6.400000e+01 : f32
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
    %12 = "offload.len"(%arg2) : (!offload.region<i8, "Linear1D">) -> index
    %13 = arith.index_cast %12 : index to i64
    %14 = arith.cmpi ult, %11, %13 : i64
    cf.cond_br %14, ^bb1, ^bb2
  ^bb1:  // pred: ^bb0
    %15 = "offload.len"(%arg1) : (!offload.slice<f32>) -> index
    %16 = arith.index_cast %15 : index to i64
    %17 = arith.cmpi ult, %5, %16 : i64
    cf.cond_br %17, ^bb3, ^bb5
  ^bb2:  // 2 preds: ^bb0, ^bb4
    return
  ^bb3:  // pred: ^bb1
    %18 = "offload.load"(%arg1, %4) : (!offload.slice<f32>, index) -> f32
    %19 = arith.mulf %18, %cst_1 : f32
    %20 = arith.maxnumf %19, %cst_0 : f32
    %21 = arith.minnumf %20, %cst : f32
    %22 = arith.cmpf olt, %21, %cst : f32
    %23 = arith.select %22, %21, %cst_0 : f32
    %24 = arith.fptoui %23 : f32 to i64
    %25 = arith.select %22, %24, %c-1_i64 : i64
    %26 = arith.cmpf uno, %19, %19 : f32
    %27 = arith.select %26, %c0_i64, %25 : i64
    %28 = arith.minui %27, %c63_i64 : i64
    %29 = "offload.len"(%arg0) : (!offload.atomic<i32>) -> index
    %30 = arith.index_cast %29 : index to i64
    %31 = arith.cmpi ult, %28, %30 : i64
    cf.cond_br %31, ^bb4, ^bb6
  ^bb4:  // pred: ^bb3
    %32 = arith.index_cast %28 : i64 to index
    %33 = "offload.atomic_rmw"(%arg0, %32, %c1_i32) {kind = 1 : i64} : (!offload.atomic<i32>, index, i32) -> i32
    "offload.store"(%c1_i8, %arg2, %10) : (i8, !offload.region<i8, "Linear1D">, index) -> ()
    cf.br ^bb2
  ^bb5:  // pred: ^bb1
    "offload.panic"(%16, %5) {site = 0 : i64} : (i64, i64) -> ()
    return
  ^bb6:  // pred: ^bb3
    "offload.panic"(%30, %28) {site = 1 : i64} : (i64, i64) -> ()
    return
  }
}

