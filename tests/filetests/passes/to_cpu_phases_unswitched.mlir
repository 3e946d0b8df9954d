// pipeline: builtin.module(convert-offload-to-cpu, canonicalize)
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
module {
  func.func @sum(%arg0: !offload.atomic<f64>, %arg1: !offload.slice<f64>) attributes {offload.kernel} {
    %c0 = arith.constant 0 : index
    %c0_i64 = arith.constant 0 : i64
    %c256_i64 = arith.constant 256 : i64
    %cst = arith.constant 0.000000e+00 : f64
    %0 = "offload.alloc_shared"() {len = 256 : i64, offset = 0 : i64} : () -> !offload.shared<f64>
    %1 = "offload.workgroup_id"() {dim = 0 : i64} : () -> index
    %2 = arith.index_cast %1 : index to i64
    %3 = "offload.workgroup_dim"() {dim = 0 : i64} : () -> index
    %4 = arith.index_cast %3 : index to i64
    %5 = arith.muli %2, %4 : i64
    %6 = "offload.thread_id"() {dim = 0 : i64} : () -> index
    %7 = arith.index_cast %6 : index to i64
    %8 = arith.addi %5, %7 : i64
    %9 = "offload.len"(%arg1) : (!offload.slice<f64>) -> index
    %10 = arith.index_cast %9 : index to i64
    %11 = arith.cmpi ult, %8, %10 : i64
    cf.cond_br %11, ^bb1, ^bb2(%cst : f64)
  ^bb1:  // pred: ^bb0
    %12 = "offload.len"(%arg1) : (!offload.slice<f64>) -> index
    %13 = arith.index_cast %12 : index to i64
    %14 = arith.cmpi ult, %8, %13 : i64
    cf.cond_br %14, ^bb3, ^bb15
  ^bb2(%15: f64):  // 2 preds: ^bb0, ^bb3
    %16 = "offload.subgroup_reduce"(%15) {combine = "arith.addf"} : (f64) -> f64
    %17 = "offload.thread_id"() {dim = 0 : i64} : () -> index
    %18 = arith.index_cast %17 : index to i64
    %19 = "offload.thread_id"() {dim = 1 : i64} : () -> index
    %20 = arith.index_cast %19 : index to i64
    %21 = "offload.thread_id"() {dim = 2 : i64} : () -> index
    %22 = arith.index_cast %21 : index to i64
    %23 = "offload.workgroup_dim"() {dim = 0 : i64} : () -> index
    %24 = arith.index_cast %23 : index to i64
    %25 = "offload.workgroup_dim"() {dim = 1 : i64} : () -> index
    %26 = arith.index_cast %25 : index to i64
    %27 = "offload.workgroup_dim"() {dim = 2 : i64} : () -> index
    %28 = arith.muli %22, %26 : i64
    %29 = arith.addi %28, %20 : i64
    %30 = arith.muli %29, %24 : i64
    %31 = arith.addi %30, %18 : i64
    %32 = arith.cmpi ult, %31, %c256_i64 : i64
    cf.cond_br %32, ^bb4, ^bb16
  ^bb3:  // pred: ^bb1
    %33 = arith.index_cast %8 : i64 to index
    %34 = "offload.load"(%arg1, %33) : (!offload.slice<f64>, index) -> f64
    cf.br ^bb2(%34 : f64)
  ^bb4:  // pred: ^bb2
    %35 = arith.index_cast %31 : i64 to index
    "offload.store"(%16, %0, %35) : (f64, !offload.shared<f64>, index) -> ()
    "offload.barrier"() : () -> ()
    %36 = "offload.subgroup_size"() : () -> index
    %37 = arith.index_cast %36 : index to i64
    %38 = "offload.subgroup_lane"() : () -> index
    %39 = arith.index_cast %38 : index to i64
    %40 = arith.muli %39, %37 : i64
    %41 = "offload.workgroup_dim"() {dim = 0 : i64} : () -> index
    %42 = arith.index_cast %41 : index to i64
    %43 = arith.cmpi ult, %40, %42 : i64
    cf.cond_br %43, ^bb5, ^bb6(%cst : f64)
  ^bb5:  // pred: ^bb4
    %44 = arith.cmpi ult, %40, %c256_i64 : i64
    cf.cond_br %44, ^bb7, ^bb17
  ^bb6(%45: f64):  // 2 preds: ^bb4, ^bb7
    %46 = "offload.subgroup_reduce"(%45) {combine = "arith.addf"} : (f64) -> f64
    %47 = arith.muli %37, %37 : i64
    cf.br ^bb8(%46, %47 : f64, i64)
  ^bb7:  // pred: ^bb5
    %48 = arith.index_cast %40 : i64 to index
    %49 = "offload.load"(%0, %48) : (!offload.shared<f64>, index) -> f64
    cf.br ^bb6(%49 : f64)
  ^bb8(%50: f64, %51: i64):  // 2 preds: ^bb6, ^bb11
    %52 = "offload.workgroup_dim"() {dim = 0 : i64} : () -> index
    %53 = arith.index_cast %52 : index to i64
    %54 = arith.cmpi ult, %51, %53 : i64
    cf.cond_br %54, ^bb9, ^bb10
  ^bb9:  // pred: ^bb8
    %55 = arith.cmpi ult, %51, %c256_i64 : i64
    cf.cond_br %55, ^bb11, ^bb18
  ^bb10:  // pred: ^bb8
    %56 = "offload.thread_id"() {dim = 0 : i64} : () -> index
    %57 = arith.index_cast %56 : index to i64
    %58 = arith.cmpi eq, %57, %c0_i64 : i64
    cf.cond_br %58, ^bb12, ^bb13
  ^bb11:  // pred: ^bb9
    %59 = arith.index_cast %51 : i64 to index
    %60 = "offload.load"(%0, %59) : (!offload.shared<f64>, index) -> f64
    %61 = arith.addf %50, %60 : f64
    %62 = arith.addi %51, %37 : i64
    cf.br ^bb8(%61, %62 : f64, i64)
  ^bb12:  // pred: ^bb10
    %63 = "offload.len"(%arg0) : (!offload.atomic<f64>) -> index
    %64 = arith.index_cast %63 : index to i64
    %65 = arith.cmpi ugt, %64, %c0_i64 : i64
    cf.cond_br %65, ^bb14, ^bb19
  ^bb13:  // 2 preds: ^bb10, ^bb14
    return
  ^bb14:  // pred: ^bb12
    %66 = "offload.atomic_rmw"(%arg0, %c0, %50) {kind = 0 : i64} : (!offload.atomic<f64>, index, f64) -> f64
    cf.br ^bb13
  ^bb15:  // pred: ^bb1
    "offload.panic"(%13, %8) {site = 0 : i64} : (i64, i64) -> ()
    return
  ^bb16:  // pred: ^bb2
    "offload.panic"(%c256_i64, %31) {site = 1 : i64} : (i64, i64) -> ()
    return
  ^bb17:  // pred: ^bb5
    "offload.panic"(%c256_i64, %40) {site = 2 : i64} : (i64, i64) -> ()
    return
  ^bb18:  // pred: ^bb9
    "offload.panic"(%c256_i64, %51) {site = 3 : i64} : (i64, i64) -> ()
    return
  ^bb19:  // pred: ^bb12
    "offload.panic"(%64, %c0_i64) {site = 4 : i64} : (i64, i64) -> ()
    return
  }
}

