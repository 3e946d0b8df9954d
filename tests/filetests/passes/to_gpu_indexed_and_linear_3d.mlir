// pipeline: builtin.module(convert-offload-to-gpu)
// An Indexed region takes its indices after its data; a 3-D region is read through a
// collapsed view, and takes its margin after it.
// CHECK: gpu.func @scatter(%arg0: memref<?xf32>, %arg1: memref<?xi64>, %arg2: memref<?x?x?xf32>, %arg3: index
// CHECK-NEXT: memref.collapse_shape %arg2 [[0, 1, 2]]
// CHECK: memref.load %arg1[%arg4] : memref<?xi64>
// CHECK-NOT: offload.
module {
  func.func @scatter(%arg0: !offload.region<f32, "Indexed">, %arg1: !offload.region<f32, "Linear3D">, %arg2: index) attributes {offload.kernel} {
    %0 = "offload.len"(%arg0) : (!offload.region<f32, "Indexed">) -> index
    %1 = "offload.load"(%arg0, %arg2) : (!offload.region<f32, "Indexed">, index) -> f32
    "offload.store"(%1, %arg0, %arg2) : (f32, !offload.region<f32, "Indexed">, index) -> ()
    %2 = "offload.extent"(%arg1) {dim = 2 : i64} : (!offload.region<f32, "Linear3D">) -> index
    %3 = "offload.margin"(%arg1) : (!offload.region<f32, "Linear3D">) -> index
    %4 = arith.addi %2, %3 : index
    %5 = "offload.workgroup_id"() {dim = 2 : i64} : () -> index
    %6 = "offload.workgroup_count"() {dim = 1 : i64} : () -> index
    %7 = arith.addi %4, %5 : index
    %8 = arith.addi %7, %6 : index
    %9 = arith.addi %8, %0 : index
    "offload.store"(%1, %arg1, %9) : (f32, !offload.region<f32, "Linear3D">, index) -> ()
    return
  }
}
