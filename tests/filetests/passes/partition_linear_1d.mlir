// pipeline: builtin.module(offload-partition)
// A thread's index: its workgroup's times the workgroup size, plus its own.
// CHECK-NOT: offload.region_index
// CHECK: func.func @saxpy
// CHECK: "offload.thread_id"() {dim = 0 : i64}
// CHECK-NEXT: "offload.workgroup_id"() {dim = 0 : i64}
// CHECK-NEXT: "offload.workgroup_dim"() {dim = 0 : i64}
// CHECK-NEXT: arith.muli
// CHECK-NEXT: arith.addi
// CHECK-NOT: offload.region_index
module {
  func.func @saxpy(%arg0: !offload.region<f32, "Linear1D">, %arg1: !offload.slice<f32>, %arg2: f32) attributes {offload.kernel} {
    %0 = "offload.region_index"(%arg0) : (!offload.region<f32, "Linear1D">) -> index
    %1 = arith.index_cast %0 : index to i64
    %2 = "offload.region_index"(%arg0) : (!offload.region<f32, "Linear1D">) -> index
    %3 = arith.index_cast %2 : index to i64
    %4 = "offload.len"(%arg0) : (!offload.region<f32, "Linear1D">) -> index
    %5 = arith.index_cast %4 : index to i64
    %6 = arith.cmpi ult, %3, %5 : i64
    cf.cond_br %6, ^bb1, ^bb2
  ^bb1:  // pred: ^bb0
    %7 = "offload.len"(%arg1) : (!offload.slice<f32>) -> index
    %8 = arith.index_cast %7 : index to i64
    %9 = arith.cmpi ult, %1, %8 : i64
    cf.cond_br %9, ^bb3, ^bb4
  ^bb2:  // 2 preds: ^bb0, ^bb3
    return
  ^bb3:  // pred: ^bb1
    %10 = "offload.load"(%arg1, %0) : (!offload.slice<f32>, index) -> f32
    %11 = arith.mulf %arg2, %10 : f32
    %12 = "offload.load"(%arg0, %2) : (!offload.region<f32, "Linear1D">, index) -> f32
    %13 = arith.addf %11, %12 : f32
    "offload.store"(%13, %arg0, %2) : (f32, !offload.region<f32, "Linear1D">, index) -> ()
    cf.br ^bb2
  ^bb4:  // pred: ^bb1
    "offload.panic"(%8, %1) {site = 0 : i64} : (i64, i64) -> ()
    return
  }
}
