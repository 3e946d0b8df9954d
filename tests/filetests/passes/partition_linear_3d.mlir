// pipeline: builtin.module(offload-partition)
// The element of (x, y, z) is ((z * height) + y) * width + x, each from its margin.
// CHECK-NOT: offload.region_index
// CHECK: "offload.margin"(%arg0)
// CHECK-NEXT: "offload.thread_id"() {dim = 2 : i64}
// CHECK: "offload.extent"(%arg0) {dim = 1 : i64}
// CHECK-NEXT: arith.muli
// CHECK: "offload.thread_id"() {dim = 1 : i64}
// CHECK: "offload.extent"(%arg0) {dim = 0 : i64}
// CHECK-NEXT: arith.muli
// CHECK: "offload.thread_id"() {dim = 0 : i64}
// CHECK-NOT: offload.region_index
module {
  func.func @fill(%arg0: !offload.region<f32, "Linear3D">, %arg1: f32) attributes {offload.kernel} {
    %0 = "offload.region_index"(%arg0) : (!offload.region<f32, "Linear3D">) -> index
    %1 = "offload.region_coord"(%arg0) {dim = 2 : i64} : (!offload.region<f32, "Linear3D">) -> index
    %2 = arith.index_cast %1 : index to i64
    %3 = arith.uitofp %2 : i64 to f32
    %4 = arith.addf %arg1, %3 : f32
    "offload.store"(%4, %arg0, %0) : (f32, !offload.region<f32, "Linear3D">, index) -> ()
    return
  }
}
