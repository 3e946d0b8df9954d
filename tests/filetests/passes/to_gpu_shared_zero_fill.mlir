// pipeline: builtin.module(convert-offload-to-gpu)
// CHECK: gpu.func @owned
// CHECK: scf.for
// CHECK-NEXT: %cast[
// CHECK: scf.for
// CHECK-NEXT: %view[
// CHECK-NOT: gpu.barrier
// CHECK: }
// CHECK-NEXT: gpu.barrier
// CHECK-NEXT: gpu.return
// CHECK: gpu.func @waits
// CHECK: scf.for
// CHECK: gpu.barrier
// CHECK-NEXT: gpu.barrier
// CHECK-NEXT: gpu.return
// Shared memory is zeroed when a workgroup starts, each thread at its own slots (rank,
// rank + threads, ...): the static array, and dynamic shared memory through its first
// view. A kernel the verifier proved to touch only its own slots before its first barrier
// (`offload.first_phase_owns_slots`) goes on at once; any other waits at a barrier.
module {
  func.func @owned(%arg0: !offload.slice<f32>) attributes {offload.kernel, offload.first_phase_owns_slots} {
    %0 = "offload.alloc_shared"() {len = 64 : i64, offset = 0 : i64} : () -> !offload.shared<f32>
    %1 = "offload.alloc_shared"() {len = -1 : i64, offset = 256 : i64} : () -> !offload.shared<i64>
    %2 = "offload.alloc_shared"() {len = -1 : i64, offset = 256 : i64} : () -> !offload.shared<f64>
    "offload.barrier"() : () -> ()
    return
  }
  func.func @waits(%arg0: !offload.slice<f32>) attributes {offload.kernel} {
    %0 = "offload.alloc_shared"() {len = 64 : i64, offset = 0 : i64} : () -> !offload.shared<f32>
    "offload.barrier"() : () -> ()
    return
  }
}
