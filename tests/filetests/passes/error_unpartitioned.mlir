// pipeline: builtin.module(convert-offload-to-gpu)
module {
  func.func @k(%arg0: !offload.region<f32, "Linear2D">) attributes {offload.kernel} {
    %0 = "offload.region_coord"(%arg0) {dim = 1 : i64} : (!offload.region<f32, "Linear2D">) -> index
    return
  }
}
