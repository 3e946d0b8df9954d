// pipeline: builtin.module(offload-math-to-llvm-intrinsics)
// Square roots are PTX's correctly rounded ones, fma and bit counts LLVM intrinsics;
// transcendentals stay for libdevice.
// CHECK-NOT: math.sqrt
// CHECK: llvm.call_intrinsic "llvm.nvvm.sqrt.rn.f"
// CHECK-NEXT: math.sin
// CHECK-NEXT: llvm.intr.fma
// CHECK: llvm.intr.ctpop
// CHECK-NOT: math.fma
module attributes {gpu.container_module} {
  gpu.module @math_and_casts_module {
    gpu.func @math_and_casts(%arg0: memref<?xf32>, %arg1: memref<?xf64>, %arg2: memref<?xi64>, %arg3: index, %arg4: index, %arg5: index) kernel {
      %c2 = arith.constant 2 : index
      %c4 = arith.constant 4 : index
      %c1 = arith.constant 1 : index
      %c0_i64 = arith.constant 0 : i64
      %c1_i64 = arith.constant 1 : i64
      %c0 = arith.constant 0 : index
      %cst = arith.constant 3.14159274 : f32
      %c0_i32 = arith.constant 0 : i32
      %c2147483647_i32 = arith.constant 2147483647 : i32
      %cst_0 = arith.constant 2.14748365E+9 : f32
      %cst_1 = arith.constant -2.14748365E+9 : f32
      %cst_2 = arith.constant 2.000000e+00 : f32
      %thread_id_x = gpu.thread_id  x
      %block_id_x = gpu.block_id  x
      %0 = arith.addi %block_id_x, %arg3 : index
      %block_dim_x = gpu.block_dim  x
      %1 = arith.muli %0, %block_dim_x : index
      %2 = arith.addi %1, %thread_id_x : index
      %3 = arith.index_cast %2 : index to i64
      %dim = memref.dim %arg0, %c0 : memref<?xf32>
      %4 = arith.index_cast %dim : index to i64
      %5 = arith.cmpi ult, %3, %4 : i64
      cf.cond_br %5, ^bb1, ^bb2
    ^bb1:  // pred: ^bb0
      %dim_3 = memref.dim %arg1, %c0 : memref<?xf64>
      %6 = arith.index_cast %dim_3 : index to i64
      %7 = arith.cmpi ult, %3, %6 : i64
      cf.cond_br %7, ^bb3, ^bb4
    ^bb2:  // 2 preds: ^bb0, ^bb3
      gpu.return
    ^bb3:  // pred: ^bb1
      %8 = memref.load %arg1[%2] : memref<?xf64>
      %9 = arith.truncf %8 : f64 to f32
      %10 = math.sqrt %9 : f32
      %11 = math.sin %9 : f32
      %12 = math.fma %10, %cst_2, %11 : f32
      %13 = arith.maxnumf %9, %cst_1 : f32
      %14 = arith.minnumf %13, %cst_0 : f32
      %15 = arith.cmpf olt, %14, %cst_0 : f32
      %16 = arith.select %15, %14, %cst_1 : f32
      %17 = arith.fptosi %16 : f32 to i32
      %18 = arith.select %15, %17, %c2147483647_i32 : i32
      %19 = arith.cmpf uno, %9, %9 : f32
      %20 = arith.select %19, %c0_i32, %18 : i32
      %21 = math.ctpop %20 : i32
      %22 = arith.uitofp %21 : i32 to f32
      %23 = arith.addf %12, %22 : f32
      %24 = arith.addf %23, %cst : f32
      memref.store %24, %arg0[%2] : memref<?xf32>
      cf.br ^bb2
    ^bb4:  // pred: ^bb1
      %25 = memref.atomic_rmw addi %c1_i64, %arg2[%c0] : (i64, memref<?xi64>) -> i64
      %26 = arith.cmpi eq, %25, %c0_i64 : i64
      %27 = arith.select %26, %c1, %c4 : index
      memref.store %c0_i64, %arg2[%27] : memref<?xi64>
      %28 = arith.addi %27, %c1 : index
      memref.store %6, %arg2[%28] : memref<?xi64>
      %29 = arith.addi %27, %c2 : index
      memref.store %3, %arg2[%29] : memref<?xi64>
      gpu.return
    }
  }
}
