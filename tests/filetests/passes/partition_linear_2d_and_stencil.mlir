// pipeline: builtin.module(offload-partition)
// Coordinates start at the region's margin; a stencil's neighbour is clamped to the grid.
// CHECK-NOT: offload.region_coord
// CHECK: "offload.margin"(%arg1)
// CHECK-NEXT: "offload.thread_id"() {dim = 1 : i64}
// CHECK-NEXT: "offload.workgroup_id"() {dim = 1 : i64}
// CHECK-NEXT: "offload.workgroup_dim"() {dim = 1 : i64}
// CHECK-NEXT: arith.muli
// CHECK-NEXT: arith.addi
// CHECK-NEXT: arith.addi
// CHECK: arith.maxsi
// CHECK-NEXT: arith.minsi
// CHECK: "offload.margin"(%arg0)
// CHECK-NOT: offload.region_coord
module {
  func.func @grid(%arg0: !offload.region<f32, "Linear2D">, %arg1: !offload.region<f32, "Stencil2D<1>">) attributes {offload.kernel} {
    %c0_i64 = arith.constant 0 : i64
    %c1_i64 = arith.constant 1 : i64
    %c-1_i64 = arith.constant -1 : i64
    %0 = "offload.region_coord"(%arg1) {dim = 1 : i64} : (!offload.region<f32, "Stencil2D<1>">) -> index
    %1 = arith.index_cast %0 : index to i64
    %2 = "offload.extent"(%arg1) {dim = 1 : i64} : (!offload.region<f32, "Stencil2D<1>">) -> index
    %3 = arith.index_cast %2 : index to i64
    %4 = arith.addi %1, %c-1_i64 : i64
    %5 = arith.subi %3, %c1_i64 : i64
    %6 = arith.maxsi %4, %c0_i64 : i64
    %7 = arith.minsi %6, %5 : i64
    %8 = "offload.region_coord"(%arg1) {dim = 0 : i64} : (!offload.region<f32, "Stencil2D<1>">) -> index
    %9 = arith.index_cast %8 : index to i64
    %10 = "offload.extent"(%arg1) {dim = 0 : i64} : (!offload.region<f32, "Stencil2D<1>">) -> index
    %11 = arith.index_cast %10 : index to i64
    %12 = arith.subi %11, %c1_i64 : i64
    %13 = arith.maxsi %9, %c0_i64 : i64
    %14 = arith.minsi %13, %12 : i64
    %15 = "offload.extent"(%arg1) {dim = 0 : i64} : (!offload.region<f32, "Stencil2D<1>">) -> index
    %16 = arith.index_cast %15 : index to i64
    %17 = arith.muli %7, %16 : i64
    %18 = arith.addi %17, %14 : i64
    %19 = "offload.len"(%arg1) : (!offload.region<f32, "Stencil2D<1>">) -> index
    %20 = arith.index_cast %19 : index to i64
    %21 = arith.cmpi ult, %18, %20 : i64
    cf.cond_br %21, ^bb1, ^bb4
  ^bb1:  // pred: ^bb0
    %22 = arith.index_cast %18 : i64 to index
    %23 = "offload.load"(%arg1, %22) : (!offload.region<f32, "Stencil2D<1>">, index) -> f32
    %24 = "offload.region_index"(%arg0) : (!offload.region<f32, "Linear2D">) -> index
    %25 = "offload.region_coord"(%arg0) {dim = 0 : i64} : (!offload.region<f32, "Linear2D">) -> index
    %26 = arith.index_cast %25 : index to i64
    %27 = "offload.region_coord"(%arg0) {dim = 1 : i64} : (!offload.region<f32, "Linear2D">) -> index
    %28 = arith.index_cast %27 : index to i64
    %29 = "offload.extent"(%arg0) {dim = 0 : i64} : (!offload.region<f32, "Linear2D">) -> index
    %30 = arith.index_cast %29 : index to i64
    %31 = "offload.extent"(%arg0) {dim = 1 : i64} : (!offload.region<f32, "Linear2D">) -> index
    %32 = arith.index_cast %31 : index to i64
    %33 = arith.cmpi ult, %26, %30 : i64
    %34 = arith.cmpi ult, %28, %32 : i64
    %35 = arith.andi %33, %34 : i1
    cf.cond_br %35, ^bb2, ^bb3
  ^bb2:  // pred: ^bb1
    %36 = "offload.region_coord"(%arg0) {dim = 1 : i64} : (!offload.region<f32, "Linear2D">) -> index
    %37 = arith.index_cast %36 : index to i64
    %38 = arith.uitofp %37 : i64 to f32
    %39 = arith.addf %23, %38 : f32
    "offload.store"(%39, %arg0, %24) : (f32, !offload.region<f32, "Linear2D">, index) -> ()
    cf.br ^bb3
  ^bb3:  // 2 preds: ^bb1, ^bb2
    return
  ^bb4:  // pred: ^bb0
    "offload.panic"(%20, %18) {site = 0 : i64} : (i64, i64) -> ()
    return
  }
}
