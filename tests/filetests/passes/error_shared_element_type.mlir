// pipeline: builtin.module(convert-offload-to-gpu)
module {
  func.func @k(%arg0: !offload.region<f32, "Linear1D">) attributes {offload.kernel} {
    %s = "offload.alloc_shared"() {len = 4 : i64, offset = 0 : i64} : () -> !offload.shared<tensor<2xf32>>
    return
  }
}
