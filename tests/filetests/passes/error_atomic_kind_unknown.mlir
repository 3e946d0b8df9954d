// pipeline: builtin.module(convert-offload-to-gpu)
module {
  func.func @k(%arg0: !offload.atomic<f32>, %v: f32) attributes {offload.kernel} {
    %c0 = arith.constant 0 : index
    %0 = "offload.atomic_rmw"(%arg0, %c0, %v) {kind = 99 : i64} : (!offload.atomic<f32>, index, f32) -> f32
    return
  }
}
