// pipeline: builtin.module(convert-offload-to-cpu)
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
  func.func @workgroup_sum(%arg0: !offload.atomic<f32>, %arg1: !offload.slice<f32>) attributes {offload.kernel} {
    %c0 = arith.constant 0 : index
    %false = arith.constant false
    %c0_i64 = arith.constant 0 : i64
    %c256_i64 = arith.constant 256 : i64
    %cst = arith.constant 0.000000e+00 : f32
    %0 = "offload.alloc_shared"() {len = 256 : i64, offset = 0 : i64} : () -> !offload.shared<f32>
    %1 = "offload.alloc_shared"() {len = -1 : i64, offset = 1024 : i64} : () -> !offload.shared<f32>
    %2 = "offload.thread_id"() {dim = 0 : i64} : () -> index
    %3 = arith.index_cast %2 : index to i64
    %4 = "offload.workgroup_id"() {dim = 0 : i64} : () -> index
    %5 = arith.index_cast %4 : index to i64
    %6 = "offload.workgroup_dim"() {dim = 0 : i64} : () -> index
    %7 = arith.index_cast %6 : index to i64
    %8 = arith.muli %5, %7 : i64
    %9 = arith.addi %8, %3 : i64
    %10 = "offload.len"(%arg1) : (!offload.slice<f32>) -> index
    %11 = arith.index_cast %10 : index to i64
    %12 = arith.cmpi ult, %9, %11 : i64
    cf.cond_br %12, ^bb1, ^bb2(%cst : f32)
  ^bb1:  // pred: ^bb0
    %13 = "offload.len"(%arg1) : (!offload.slice<f32>) -> index
    %14 = arith.index_cast %13 : index to i64
    %15 = arith.cmpi ult, %9, %14 : i64
    cf.cond_br %15, ^bb3, ^bb15
  ^bb2(%16: f32):  // 2 preds: ^bb0, ^bb3
    %17 = "offload.subgroup_reduce"(%16) {combine = "arith.addf"} : (f32) -> f32
    %18 = "offload.thread_id"() {dim = 0 : i64} : () -> index
    %19 = arith.index_cast %18 : index to i64
    %20 = "offload.thread_id"() {dim = 1 : i64} : () -> index
    %21 = arith.index_cast %20 : index to i64
    %22 = "offload.thread_id"() {dim = 2 : i64} : () -> index
    %23 = arith.index_cast %22 : index to i64
    %24 = "offload.workgroup_dim"() {dim = 0 : i64} : () -> index
    %25 = arith.index_cast %24 : index to i64
    %26 = "offload.workgroup_dim"() {dim = 1 : i64} : () -> index
    %27 = arith.index_cast %26 : index to i64
    %28 = "offload.workgroup_dim"() {dim = 2 : i64} : () -> index
    %29 = arith.muli %23, %27 : i64
    %30 = arith.addi %29, %21 : i64
    %31 = arith.muli %30, %25 : i64
    %32 = arith.addi %31, %19 : i64
    %33 = arith.cmpi ult, %32, %c256_i64 : i64
    cf.cond_br %33, ^bb4, ^bb16
  ^bb3:  // pred: ^bb1
    %34 = arith.index_cast %9 : i64 to index
    %35 = "offload.load"(%arg1, %34) : (!offload.slice<f32>, index) -> f32
    cf.br ^bb2(%35 : f32)
  ^bb4:  // pred: ^bb2
    %36 = arith.index_cast %32 : i64 to index
    "offload.store"(%17, %0, %36) : (f32, !offload.shared<f32>, index) -> ()
    %37 = "offload.thread_id"() {dim = 0 : i64} : () -> index
    %38 = arith.index_cast %37 : index to i64
    %39 = "offload.thread_id"() {dim = 1 : i64} : () -> index
    %40 = arith.index_cast %39 : index to i64
    %41 = "offload.thread_id"() {dim = 2 : i64} : () -> index
    %42 = arith.index_cast %41 : index to i64
    %43 = "offload.workgroup_dim"() {dim = 0 : i64} : () -> index
    %44 = arith.index_cast %43 : index to i64
    %45 = "offload.workgroup_dim"() {dim = 1 : i64} : () -> index
    %46 = arith.index_cast %45 : index to i64
    %47 = "offload.workgroup_dim"() {dim = 2 : i64} : () -> index
    %48 = arith.muli %42, %46 : i64
    %49 = arith.addi %48, %40 : i64
    %50 = arith.muli %49, %44 : i64
    %51 = arith.addi %50, %38 : i64
    %52 = "offload.len"(%1) : (!offload.shared<f32>) -> index
    %53 = arith.index_cast %52 : index to i64
    %54 = arith.cmpi ult, %51, %53 : i64
    cf.cond_br %54, ^bb5, ^bb17
  ^bb5:  // pred: ^bb4
    %55 = arith.index_cast %51 : i64 to index
    "offload.store"(%16, %1, %55) : (f32, !offload.shared<f32>, index) -> ()
    "offload.barrier"() : () -> ()
    %56 = "offload.subgroup_lane"() : () -> index
    %57 = arith.index_cast %56 : index to i64
    %58 = "offload.subgroup_size"() : () -> index
    %59 = arith.index_cast %58 : index to i64
    %60 = arith.muli %57, %59 : i64
    %61 = arith.cmpi ult, %60, %c256_i64 : i64
    cf.cond_br %61, ^bb6, ^bb7(%cst : f32)
  ^bb6:  // pred: ^bb5
    %62 = "offload.subgroup_size"() : () -> index
    %63 = arith.index_cast %62 : index to i64
    %64 = arith.muli %57, %63 : i64
    %65 = arith.cmpi ult, %64, %c256_i64 : i64
    cf.cond_br %65, ^bb8, ^bb18
  ^bb7(%66: f32):  // 2 preds: ^bb5, ^bb8
    %67 = "offload.subgroup_reduce"(%66) {combine = "arith.addf"} : (f32) -> f32
    %68 = "offload.len"(%1) : (!offload.shared<f32>) -> index
    %69 = arith.index_cast %68 : index to i64
    %70 = arith.cmpi ugt, %69, %c0_i64 : i64
    cf.cond_br %70, ^bb9, ^bb19
  ^bb8:  // pred: ^bb6
    %71 = arith.index_cast %64 : i64 to index
    %72 = "offload.load"(%0, %71) : (!offload.shared<f32>, index) -> f32
    cf.br ^bb7(%72 : f32)
  ^bb9:  // pred: ^bb7
    %73 = "offload.load"(%1, %c0) : (!offload.shared<f32>, index) -> f32
    %74 = arith.cmpi eq, %3, %c0_i64 : i64
    cf.cond_br %74, ^bb12, ^bb13(%false : i1)
  ^bb10:  // pred: ^bb13
    %75 = "offload.workgroup_id"() {dim = 0 : i64} : () -> index
    %76 = arith.index_cast %75 : index to i64
    %77 = "offload.len"(%arg0) : (!offload.atomic<f32>) -> index
    %78 = arith.index_cast %77 : index to i64
    %79 = arith.cmpi ult, %76, %78 : i64
    cf.cond_br %79, ^bb14, ^bb20
  ^bb11:  // 2 preds: ^bb13, ^bb14
    return
  ^bb12:  // pred: ^bb9
    %80 = arith.cmpf oge, %73, %cst : f32
    cf.br ^bb13(%80 : i1)
  ^bb13(%81: i1):  // 2 preds: ^bb9, ^bb12
    cf.cond_br %81, ^bb10, ^bb11
  ^bb14:  // pred: ^bb10
    %82 = "offload.atomic_rmw"(%arg0, %75, %67) {kind = 0 : i64} : (!offload.atomic<f32>, index, f32) -> f32
    cf.br ^bb11
  ^bb15:  // pred: ^bb1
    "offload.panic"(%14, %9) {site = 0 : i64} : (i64, i64) -> ()
    return
  ^bb16:  // pred: ^bb2
    "offload.panic"(%c256_i64, %32) {site = 1 : i64} : (i64, i64) -> ()
    return
  ^bb17:  // pred: ^bb4
    "offload.panic"(%53, %51) {site = 2 : i64} : (i64, i64) -> ()
    return
  ^bb18:  // pred: ^bb6
    "offload.panic"(%c256_i64, %64) {site = 3 : i64} : (i64, i64) -> ()
    return
  ^bb19:  // pred: ^bb7
    "offload.panic"(%69, %c0_i64) {site = 4 : i64} : (i64, i64) -> ()
    return
  ^bb20:  // pred: ^bb10
    "offload.panic"(%78, %76) {site = 5 : i64} : (i64, i64) -> ()
    return
  }
}

