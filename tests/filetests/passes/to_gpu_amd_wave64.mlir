// pipeline: builtin.module(convert-offload-to-gpu)
// On a 64-lane wavefront: ballots through ROCDL, reductions in six butterfly steps.
// CHECK: rocdl.ballot %arg1 : i64
// CHECK: %c32_i32, %c64_i32
// CHECK: %c16_i32, %c64_i32
// CHECK: %c8_i32, %c64_i32
// CHECK: %c4_i32, %c64_i32
// CHECK: %c2_i32, %c64_i32
// CHECK: %c1_i32, %c64_i32
// CHECK-NOT: nvvm.
module attributes {offload.subgroup_size = 64 : i64, offload.vendor = "amd"} {
  func.func @votes(%arg0: !offload.region<i64, "Linear1D">, %arg1: i1, %arg2: f32) attributes {offload.kernel} {
    %0 = "offload.ballot"(%arg1) : (i1) -> i64
    %1 = "offload.subgroup_size"() : () -> index
    %2 = "offload.subgroup_reduce"(%arg2) {combine = "arith.addf"} : (f32) -> f32
    "offload.store"(%0, %arg0, %1) : (i64, !offload.region<i64, "Linear1D">, index) -> ()
    return
  }
}
