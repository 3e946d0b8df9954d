// pipeline: builtin.module(offload-partition)
module {
  func.func @k(%arg0: !offload.region<f32, "Bogus">) attributes {offload.kernel} {
    %0 = "offload.region_index"(%arg0) : (!offload.region<f32, "Bogus">) -> index
    return
  }
}
