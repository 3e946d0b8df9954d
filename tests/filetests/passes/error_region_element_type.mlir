// pipeline: builtin.module(convert-offload-to-cpu)
module {
  func.func @k(%arg0: !offload.slice<none>) attributes {offload.kernel} {
    %c0 = arith.constant 0 : index
    %0 = "offload.load"(%arg0, %c0) : (!offload.slice<none>, index) -> none
    return
  }
}
