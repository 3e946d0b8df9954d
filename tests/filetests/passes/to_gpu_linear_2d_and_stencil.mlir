// pipeline: builtin.module(convert-offload-to-gpu)
// 2-D regions arrive as 2-D memrefs, each followed by its margin, read through collapsed
// views.
// CHECK: gpu.func @grid(%arg0: memref<?x?xf32>, %arg1: index, %arg2: memref<?x?xf32>, %arg3: index, %arg4: memref<?xi64>
// CHECK-NEXT: memref.collapse_shape %arg0 [[0, 1]]
// CHECK-NEXT: memref.collapse_shape %arg2 [[0, 1]]
// CHECK-NOT: offload.
module {
  func.func @grid(%arg0: !offload.region<f32, "Linear2D">, %arg1: !offload.region<f32, "Stencil2D<1>">) attributes {offload.kernel} {
    %c0_i64 = arith.constant 0 : i64
    %c1_i64 = arith.constant 1 : i64
    %c-1_i64 = arith.constant -1 : i64
    %0 = "offload.thread_id"() {dim = 1 : i64} : () -> index
    %1 = "offload.workgroup_id"() {dim = 1 : i64} : () -> index
    %2 = "offload.workgroup_dim"() {dim = 1 : i64} : () -> index
    %3 = arith.muli %1, %2 : index
    %4 = arith.addi %3, %0 : index
    %5 = arith.index_cast %4 : index to i64
    %6 = "offload.extent"(%arg1) {dim = 1 : i64} : (!offload.region<f32, "Stencil2D<1>">) -> index
    %7 = arith.index_cast %6 : index to i64
    %8 = arith.addi %5, %c-1_i64 : i64
    %9 = arith.subi %7, %c1_i64 : i64
    %10 = arith.maxsi %8, %c0_i64 : i64
    %11 = arith.minsi %10, %9 : i64
    %12 = "offload.thread_id"() {dim = 0 : i64} : () -> index
    %13 = "offload.workgroup_id"() {dim = 0 : i64} : () -> index
    %14 = "offload.workgroup_dim"() {dim = 0 : i64} : () -> index
    %15 = arith.muli %13, %14 : index
    %16 = arith.addi %15, %12 : index
    %17 = arith.index_cast %16 : index to i64
    %18 = "offload.extent"(%arg1) {dim = 0 : i64} : (!offload.region<f32, "Stencil2D<1>">) -> index
    %19 = arith.index_cast %18 : index to i64
    %20 = arith.subi %19, %c1_i64 : i64
    %21 = arith.maxsi %17, %c0_i64 : i64
    %22 = arith.minsi %21, %20 : i64
    %23 = "offload.extent"(%arg1) {dim = 0 : i64} : (!offload.region<f32, "Stencil2D<1>">) -> index
    %24 = arith.index_cast %23 : index to i64
    %25 = arith.muli %11, %24 : i64
    %26 = arith.addi %25, %22 : i64
    %27 = "offload.len"(%arg1) : (!offload.region<f32, "Stencil2D<1>">) -> index
    %28 = arith.index_cast %27 : index to i64
    %29 = arith.cmpi ult, %26, %28 : i64
    cf.cond_br %29, ^bb1, ^bb4
  ^bb1:  // pred: ^bb0
    %30 = arith.index_cast %26 : i64 to index
    %31 = "offload.load"(%arg1, %30) : (!offload.region<f32, "Stencil2D<1>">, index) -> f32
    %32 = "offload.thread_id"() {dim = 0 : i64} : () -> index
    %33 = "offload.workgroup_id"() {dim = 0 : i64} : () -> index
    %34 = "offload.workgroup_dim"() {dim = 0 : i64} : () -> index
    %35 = arith.muli %33, %34 : index
    %36 = arith.addi %35, %32 : index
    %37 = "offload.thread_id"() {dim = 1 : i64} : () -> index
    %38 = "offload.workgroup_id"() {dim = 1 : i64} : () -> index
    %39 = "offload.workgroup_dim"() {dim = 1 : i64} : () -> index
    %40 = arith.muli %38, %39 : index
    %41 = arith.addi %40, %37 : index
    %42 = "offload.extent"(%arg0) {dim = 0 : i64} : (!offload.region<f32, "Linear2D">) -> index
    %43 = arith.muli %41, %42 : index
    %44 = arith.addi %43, %36 : index
    %45 = "offload.thread_id"() {dim = 0 : i64} : () -> index
    %46 = "offload.workgroup_id"() {dim = 0 : i64} : () -> index
    %47 = "offload.workgroup_dim"() {dim = 0 : i64} : () -> index
    %48 = arith.muli %46, %47 : index
    %49 = arith.addi %48, %45 : index
    %50 = arith.index_cast %49 : index to i64
    %51 = "offload.thread_id"() {dim = 1 : i64} : () -> index
    %52 = "offload.workgroup_id"() {dim = 1 : i64} : () -> index
    %53 = "offload.workgroup_dim"() {dim = 1 : i64} : () -> index
    %54 = arith.muli %52, %53 : index
    %55 = arith.addi %54, %51 : index
    %56 = arith.index_cast %55 : index to i64
    %57 = "offload.extent"(%arg0) {dim = 0 : i64} : (!offload.region<f32, "Linear2D">) -> index
    %58 = arith.index_cast %57 : index to i64
    %59 = "offload.extent"(%arg0) {dim = 1 : i64} : (!offload.region<f32, "Linear2D">) -> index
    %60 = arith.index_cast %59 : index to i64
    %61 = arith.cmpi ult, %50, %58 : i64
    %62 = arith.cmpi ult, %56, %60 : i64
    %63 = arith.andi %61, %62 : i1
    cf.cond_br %63, ^bb2, ^bb3
  ^bb2:  // pred: ^bb1
    %64 = "offload.thread_id"() {dim = 1 : i64} : () -> index
    %65 = "offload.workgroup_id"() {dim = 1 : i64} : () -> index
    %66 = "offload.workgroup_dim"() {dim = 1 : i64} : () -> index
    %67 = arith.muli %65, %66 : index
    %68 = arith.addi %67, %64 : index
    %69 = arith.index_cast %68 : index to i64
    %70 = arith.uitofp %69 : i64 to f32
    %71 = arith.addf %31, %70 : f32
    "offload.store"(%71, %arg0, %44) : (f32, !offload.region<f32, "Linear2D">, index) -> ()
    cf.br ^bb3
  ^bb3:  // 2 preds: ^bb1, ^bb2
    return
  ^bb4:  // pred: ^bb0
    "offload.panic"(%28, %26) {site = 0 : i64} : (i64, i64) -> ()
    return
  }
}

