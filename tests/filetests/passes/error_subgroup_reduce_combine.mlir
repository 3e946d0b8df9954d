// pipeline: builtin.module(convert-offload-to-gpu)
module {
  func.func @k(%arg0: f32) attributes {offload.kernel} {
    %0 = "offload.subgroup_reduce"(%arg0) {combine = "arith.divf"} : (f32) -> f32
    return
  }
}
