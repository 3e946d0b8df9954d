// pipeline: builtin.module(offload-partition)
// A thread's chunk starts at its index times 4, and is at most 4 long, less at the end.
// CHECK-NOT: offload.region_index
// CHECK: func.func @chunks
// CHECK: "offload.workgroup_dim"() {dim = 0 : i64}
// CHECK-NEXT: arith.muli
// CHECK-NEXT: arith.addi
// CHECK-NEXT: , %c4 : index
// CHECK: arith.minui
// CHECK-NOT: offload.region_index
module {
  func.func @chunks(%arg0: !offload.region<i8, "Chunked<4>">) attributes {offload.kernel} {
    %c1_i64 = arith.constant 1 : i64
    %c0_i64 = arith.constant 0 : i64
    %c4_i64 = arith.constant 4 : i64
    %0 = "offload.region_index"(%arg0) : (!offload.region<i8, "Chunked<4>">) -> index
    %1 = arith.index_cast %0 : index to i64
    %2 = "offload.len"(%arg0) : (!offload.region<i8, "Chunked<4>">) -> index
    %3 = arith.index_cast %2 : index to i64
    %4 = arith.cmpi ult, %1, %3 : i64
    cf.cond_br %4, ^bb1, ^bb2
  ^bb1:  // pred: ^bb0
    %5 = "offload.len"(%arg0) : (!offload.region<i8, "Chunked<4>">) -> index
    %6 = arith.index_cast %5 : index to i64
    %7 = arith.subi %6, %1 : i64
    %8 = arith.minui %7, %c4_i64 : i64
    cf.br ^bb3(%c0_i64 : i64)
  ^bb2:  // 3 preds: ^bb0, ^bb3, ^bb5
    return
  ^bb3(%9: i64):  // 2 preds: ^bb1, ^bb6
    %10 = arith.cmpi ult, %9, %8 : i64
    cf.cond_br %10, ^bb4, ^bb2
  ^bb4:  // pred: ^bb3
    cf.cond_br %10, ^bb5, ^bb7
  ^bb5:  // pred: ^bb4
    %11 = arith.addi %1, %9 : i64
    %12 = arith.trunci %9 : i64 to i8
    %13 = arith.index_cast %11 : i64 to index
    "offload.store"(%12, %arg0, %13) : (i8, !offload.region<i8, "Chunked<4>">, index) -> ()
    %14 = arith.subi %8, %9 : i64
    %15 = arith.cmpi ule, %14, %c1_i64 : i64
    cf.cond_br %15, ^bb2, ^bb6
  ^bb6:  // pred: ^bb5
    %16 = arith.addi %9, %c1_i64 : i64
    cf.br ^bb3(%16 : i64)
  ^bb7:  // pred: ^bb4
    "offload.panic"(%8, %9) {site = 0 : i64} : (i64, i64) -> ()
    return
  }
}
