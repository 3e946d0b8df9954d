// pipeline: builtin.module(convert-offload-to-cpu)
module {
  func.func @k(%arg0: !offload.region<f32, "Linear1D">) attributes {offload.kernel} {
    %0 = "offload.thread_id"() {dim = 7 : i64} : () -> index
    return
  }
}
