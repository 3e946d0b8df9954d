// pipeline: builtin.module(convert-offload-to-gpu)
module attributes {offload.subgroup_size = 64 : i64, offload.vendor = "amd"} {
  func.func @votes(%arg0: !offload.region<i64, "Linear1D">, %arg1: i1, %arg2: f32) attributes {offload.kernel} {
    %0 = "offload.ballot"(%arg1) : (i1) -> i64
    %1 = "offload.subgroup_size"() : () -> index
    %2 = "offload.subgroup_reduce"(%arg2) {combine = "arith.addf"} : (f32) -> f32
    "offload.store"(%0, %arg0, %1) : (i64, !offload.region<i64, "Linear1D">, index) -> ()
    return
  }
}
