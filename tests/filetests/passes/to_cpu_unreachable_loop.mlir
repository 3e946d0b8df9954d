// pipeline: builtin.module(offload-partition, convert-offload-to-cpu, canonicalize{top-down=false})
// CHECK: func.func @fuzz_800157
// CHECK: scf.index_switch
// CHECK-NOT: offload.
// A barrier kernel from fuzz seed 800157: in its copy for phase 0, a loop entered only
// from phase 1 is unreachable once a branch folds; a top-down canonicalizer rewrote it forever.
module {
  func.func @fuzz_800157(%arg0: !offload.region<i16, "Indexed">, %arg1: i64, %arg2: !offload.region<i32, "Stencil2D<2>">) attributes {offload.kernel, offload.no_fp_contract} {
    %c94_i16 = arith.constant 94 : i16
    %c2_i64 = arith.constant 2 : i64
    %c4_i64 = arith.constant 4 : i64
    %c1_i64 = arith.constant 1 : i64
    %c5_i64 = arith.constant 5 : i64
    cf.br ^bb1(%c1_i64 : i64)
  ^bb1(%0: i64):  // 2 preds: ^bb0, ^bb2
    %1 = arith.cmpi slt, %0, %c5_i64 : i64
    cf.cond_br %1, ^bb2, ^bb3(%c2_i64 : i64)
  ^bb2:  // pred: ^bb1
    "offload.barrier"() : () -> ()
    %2 = arith.addi %0, %c1_i64 : i64
    cf.br ^bb1(%2 : i64)
  ^bb3(%3: i64):  // 2 preds: ^bb1, ^bb9
    %4 = arith.cmpi slt, %3, %c4_i64 : i64
    cf.cond_br %4, ^bb5, ^bb4
  ^bb4:  // pred: ^bb3
    return
  ^bb5:  // pred: ^bb3
    %5 = "offload.region_index"(%arg0) : (!offload.region<i16, "Indexed">) -> index
    %6 = arith.index_cast %5 : index to i64
    %7 = "offload.len"(%arg0) : (!offload.region<i16, "Indexed">) -> index
    %8 = arith.index_cast %7 : index to i64
    %9 = arith.cmpi ult, %6, %8 : i64
    cf.cond_br %9, ^bb6, ^bb7
  ^bb6:  // pred: ^bb5
    %10 = "offload.load"(%arg0, %5) : (!offload.region<i16, "Indexed">, index) -> i16
    "offload.store"(%10, %arg0, %5) : (i16, !offload.region<i16, "Indexed">, index) -> ()
    cf.br ^bb7
  ^bb7:  // 2 preds: ^bb5, ^bb6
    %11 = "offload.region_index"(%arg0) : (!offload.region<i16, "Indexed">) -> index
    %12 = arith.index_cast %11 : index to i64
    %13 = "offload.len"(%arg0) : (!offload.region<i16, "Indexed">) -> index
    %14 = arith.index_cast %13 : index to i64
    %15 = arith.cmpi ult, %12, %14 : i64
    cf.cond_br %15, ^bb8, ^bb9
  ^bb8:  // pred: ^bb7
    "offload.store"(%c94_i16, %arg0, %11) : (i16, !offload.region<i16, "Indexed">, index) -> ()
    cf.br ^bb9
  ^bb9:  // 2 preds: ^bb7, ^bb8
    %16 = arith.addi %3, %c1_i64 : i64
    cf.br ^bb3(%16 : i64)
  }
}
