// pipeline: builtin.module(offload-partition, convert-offload-to-cpu)
// The phase and each thread's stopped barrier; the workgroup's shared block zeroed
// before it runs; its phases in a while loop, unswitched per phase.
// CHECK: memref.alloca() : memref<i32>
// CHECK-NEXT: memref.alloc(
// CHECK: to %dim step %c1
// CHECK-NEXT: memref.store %c0_i8, %arg8[
// CHECK: scf.while
// CHECK: scf.index_switch
// CHECK-NEXT: case 1
// CHECK-NOT: offload.
// A Hillis-Steele scan: barriers inside a loop. The loop counter and the value read
// before the middle barrier are kept per thread; the thread's rank is recomputed.
module {
  func.func @block_scan(%arg0: !offload.region<f32, "Linear1D">, %arg1: !offload.slice<f32>) attributes {offload.kernel} {
    %c2_i64 = arith.constant 2 : i64
    %c1_i64 = arith.constant 1 : i64
    %c64_i64 = arith.constant 64 : i64
    %cst = arith.constant 0.000000e+00 : f32
    %0 = "offload.alloc_shared"() {len = 64 : i64, offset = 0 : i64} : () -> !offload.shared<f32>
    %1 = "offload.thread_id"() {dim = 2 : i64} : () -> index
    %2 = arith.index_cast %1 : index to i64
    %3 = "offload.workgroup_dim"() {dim = 1 : i64} : () -> index
    %4 = arith.index_cast %3 : index to i64
    %5 = arith.muli %2, %4 : i64
    %6 = "offload.thread_id"() {dim = 1 : i64} : () -> index
    %7 = arith.index_cast %6 : index to i64
    %8 = arith.addi %5, %7 : i64
    %9 = "offload.workgroup_dim"() {dim = 0 : i64} : () -> index
    %10 = arith.index_cast %9 : index to i64
    %11 = arith.muli %8, %10 : i64
    %12 = "offload.thread_id"() {dim = 0 : i64} : () -> index
    %13 = arith.index_cast %12 : index to i64
    %14 = arith.addi %11, %13 : i64
    %15 = "offload.region_index"(%arg0) : (!offload.region<f32, "Linear1D">) -> index
    %16 = arith.index_cast %15 : index to i64
    %17 = "offload.len"(%arg1) : (!offload.slice<f32>) -> index
    %18 = arith.index_cast %17 : index to i64
    %19 = arith.cmpi ult, %16, %18 : i64
    cf.cond_br %19, ^bb1, ^bb2(%cst : f32)
  ^bb1:  // pred: ^bb0
    %20 = "offload.len"(%arg1) : (!offload.slice<f32>) -> index
    %21 = arith.index_cast %20 : index to i64
    %22 = arith.cmpi ult, %16, %21 : i64
    cf.cond_br %22, ^bb3, ^bb15
  ^bb2(%23: f32):  // 2 preds: ^bb0, ^bb3
    %24 = "offload.thread_id"() {dim = 2 : i64} : () -> index
    %25 = arith.index_cast %24 : index to i64
    %26 = "offload.workgroup_dim"() {dim = 1 : i64} : () -> index
    %27 = arith.index_cast %26 : index to i64
    %28 = arith.muli %25, %27 : i64
    %29 = "offload.thread_id"() {dim = 1 : i64} : () -> index
    %30 = arith.index_cast %29 : index to i64
    %31 = arith.addi %28, %30 : i64
    %32 = "offload.workgroup_dim"() {dim = 0 : i64} : () -> index
    %33 = arith.index_cast %32 : index to i64
    %34 = arith.muli %31, %33 : i64
    %35 = "offload.thread_id"() {dim = 0 : i64} : () -> index
    %36 = arith.index_cast %35 : index to i64
    %37 = arith.addi %34, %36 : i64
    %38 = arith.cmpi ult, %37, %c64_i64 : i64
    cf.cond_br %38, ^bb4, ^bb16
  ^bb3:  // pred: ^bb1
    %39 = "offload.load"(%arg1, %15) : (!offload.slice<f32>, index) -> f32
    cf.br ^bb2(%39 : f32)
  ^bb4:  // pred: ^bb2
    %40 = arith.index_cast %37 : i64 to index
    "offload.store"(%23, %0, %40) : (f32, !offload.shared<f32>, index) -> ()
    "offload.barrier"() : () -> ()
    cf.br ^bb5(%c1_i64 : i64)
  ^bb5(%41: i64):  // 2 preds: ^bb4, ^bb11
    %42 = arith.cmpi ult, %41, %c64_i64 : i64
    cf.cond_br %42, ^bb6, ^bb7
  ^bb6:  // pred: ^bb5
    %43 = arith.cmpi uge, %14, %41 : i64
    cf.cond_br %43, ^bb8, ^bb9(%cst : f32)
  ^bb7:  // pred: ^bb5
    %44 = "offload.region_index"(%arg0) : (!offload.region<f32, "Linear1D">) -> index
    %45 = arith.index_cast %44 : index to i64
    %46 = "offload.len"(%arg0) : (!offload.region<f32, "Linear1D">) -> index
    %47 = arith.index_cast %46 : index to i64
    %48 = arith.cmpi ult, %45, %47 : i64
    cf.cond_br %48, ^bb12, ^bb13
  ^bb8:  // pred: ^bb6
    %49 = arith.subi %14, %41 : i64
    %50 = arith.cmpi ult, %49, %c64_i64 : i64
    cf.cond_br %50, ^bb10, ^bb17
  ^bb9(%51: f32):  // 2 preds: ^bb6, ^bb10
    "offload.barrier"() : () -> ()
    %52 = arith.cmpi ult, %14, %c64_i64 : i64
    cf.cond_br %52, ^bb11, ^bb18
  ^bb10:  // pred: ^bb8
    %53 = arith.index_cast %49 : i64 to index
    %54 = "offload.load"(%0, %53) : (!offload.shared<f32>, index) -> f32
    cf.br ^bb9(%54 : f32)
  ^bb11:  // pred: ^bb9
    %55 = arith.index_cast %14 : i64 to index
    %56 = "offload.load"(%0, %55) : (!offload.shared<f32>, index) -> f32
    %57 = arith.addf %56, %51 : f32
    "offload.store"(%57, %0, %55) : (f32, !offload.shared<f32>, index) -> ()
    "offload.barrier"() : () -> ()
    %58 = arith.muli %41, %c2_i64 : i64
    cf.br ^bb5(%58 : i64)
  ^bb12:  // pred: ^bb7
    %59 = arith.cmpi ult, %14, %c64_i64 : i64
    cf.cond_br %59, ^bb14, ^bb19
  ^bb13:  // 2 preds: ^bb7, ^bb14
    return
  ^bb14:  // pred: ^bb12
    %60 = arith.index_cast %14 : i64 to index
    %61 = "offload.load"(%0, %60) : (!offload.shared<f32>, index) -> f32
    "offload.store"(%61, %arg0, %44) : (f32, !offload.region<f32, "Linear1D">, index) -> ()
    cf.br ^bb13
  ^bb15:  // pred: ^bb1
    "offload.panic"(%21, %16) {site = 0 : i64} : (i64, i64) -> ()
    return
  ^bb16:  // pred: ^bb2
    "offload.panic"(%c64_i64, %37) {site = 1 : i64} : (i64, i64) -> ()
    return
  ^bb17:  // pred: ^bb8
    "offload.panic"(%c64_i64, %49) {site = 2 : i64} : (i64, i64) -> ()
    return
  ^bb18:  // pred: ^bb9
    "offload.panic"(%c64_i64, %14) {site = 3 : i64} : (i64, i64) -> ()
    return
  ^bb19:  // pred: ^bb12
    "offload.panic"(%c64_i64, %14) {site = 4 : i64} : (i64, i64) -> ()
    return
  }
}
