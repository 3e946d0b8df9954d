// The CUDA C++ twins of `offload-bench suite`'s kernels (tools/bench/src/suite/kernels.rs,
// and fir16, fir16_const, block_scan and matmul in tools/bench/src/main.rs): the same
// algorithm, the same launch geometry, the same names. There is no host code here:
// `offload-bench suite` loads this file's PTX with the CUDA driver, launches each twin
// with the geometry it gives our kernel, and times both the same way.
//
// Build: nvcc -O3 -arch=sm_90 -ptx suite.cu -o suite.ptx
//
// Conventions, so that the Rust side can pass the arguments without a header:
// - every entry point is `extern "C"` (unmangled) and takes plain parameters: device
//   pointers, `unsigned long long` sizes, `float` scalars;
// - outputs come first, then inputs, then scalars, then sizes (the matrix products keep
//   matmul.cu's order: A, B, C, n);
// - one-dimensional kernels run in blocks of 256 threads, one element per thread
//   (`i < n` guards the last block); 2-D kernels in 16x16 blocks, x along a row;
//   the 3-D stencil in 32x4x2 blocks.
// Like nvcc's default, a multiply and an add may be contracted into one FMA, as our
// compiler does on GPUs.

#include <cuda_bf16.h>
#include <cuda_fp16.h>

// A float warp sum: a butterfly over the 32 lanes, every lane ends with the total.
__device__ __forceinline__ float warp_sum(float v) {
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

// A float warp maximum, as `warp_sum`.
__device__ __forceinline__ float warp_max(float v) {
  for (int offset = 16; offset > 0; offset >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}

// Slots of the scratch array behind `block_sum` and `block_max`: one per thread of the
// largest block, as our compiler gives `workgroup_sum` and friends (1024 per element
// type), so both sides use the same shared memory.
#define SCRATCH 1024

// `workgroup_sum(v)` as our compiler builds it: each warp's sum goes to the thread's own
// slot; after a barrier, lane l of every warp adds slots l*32, l*32 + 32*32, ... (the
// first slot of each warp), the warp sums those, and a second barrier lets the scratch
// be written again. Every thread returns the block's total. 1-D blocks only.
__device__ __forceinline__ float block_sum(float v, float *scratch) {
  v = warp_sum(v);
  scratch[threadIdx.x] = v;
  __syncthreads();
  float acc = 0.0f;
  for (unsigned k = (threadIdx.x % 32) * 32; k < blockDim.x; k += 32 * 32) acc += scratch[k];
  acc = warp_sum(acc);
  __syncthreads();
  return acc;
}

// `workgroup_max(v)`, as `block_sum`.
__device__ __forceinline__ float block_max(float v, float *scratch) {
  v = warp_max(v);
  scratch[threadIdx.x] = v;
  __syncthreads();
  float acc = __int_as_float((int)0xff800000u);  // -infinity
  for (unsigned k = (threadIdx.x % 32) * 32; k < blockDim.x; k += 32 * 32) acc = fmaxf(acc, scratch[k]);
  acc = warp_max(acc);
  __syncthreads();
  return acc;
}

// This thread's element index in a 1-D launch.
__device__ __forceinline__ unsigned long long global_index() {
  return (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
}

// STREAM copy: c = a.
extern "C" __global__ void stream_copy(float *c, const float *a, unsigned long long n) {
  unsigned long long i = global_index();
  if (i < n) c[i] = a[i];
}

// STREAM scale: b = s * c.
extern "C" __global__ void stream_scale(float *b, const float *c, float s, unsigned long long n) {
  unsigned long long i = global_index();
  if (i < n) b[i] = s * c[i];
}

// STREAM add: c = a + b.
extern "C" __global__ void stream_add(float *c, const float *a, const float *b, unsigned long long n) {
  unsigned long long i = global_index();
  if (i < n) c[i] = a[i] + b[i];
}

// STREAM triad: a = b + s * c.
extern "C" __global__ void stream_triad(float *a, const float *b, const float *c, float s,
                                        unsigned long long n) {
  unsigned long long i = global_index();
  if (i < n) a[i] = b[i] + s * c[i];
}

// The triad in half precision, each operation rounded to the type (`__hmul_rn` and
// `__hadd_rn` are never contracted into one FMA).
extern "C" __global__ void half_triad(__half *a, const __half *b, const __half *c, __half s,
                                      unsigned long long n) {
  unsigned long long i = global_index();
  if (i < n) a[i] = __hadd_rn(b[i], __hmul_rn(s, c[i]));
}

extern "C" __global__ void bfloat_triad(__nv_bfloat16 *a, const __nv_bfloat16 *b,
                                        const __nv_bfloat16 *c, __nv_bfloat16 s,
                                        unsigned long long n) {
  unsigned long long i = global_index();
  if (i < n) a[i] = __hadd_rn(b[i], __hmul_rn(s, c[i]));
}

// y = a * x + y in bf16, each operation rounded to bf16.
extern "C" __global__ void bfloat_saxpy(__nv_bfloat16 *y, const __nv_bfloat16 *x,
                                        __nv_bfloat16 a, unsigned long long n) {
  unsigned long long i = global_index();
  if (i < n) y[i] = __hadd_rn(__hmul_rn(a, x[i]), y[i]);
}

// The dot product of x and y added into *total: a grid-stride loop per thread, the
// block's sum, one atomic add per block. *total is zeroed before each launch.
extern "C" __global__ void dot(float *total, const float *x, const float *y, unsigned long long n,
                               unsigned long long stride) {
  __shared__ float scratch[SCRATCH];
  float acc = 0.0f;
  for (unsigned long long j = global_index(); j < n; j += stride) acc += x[j] * y[j];
  float block = block_sum(acc, scratch);
  if (threadIdx.x == 0) atomicAdd(total, block);
}

// The sum of x added into *total, as `dot`.
extern "C" __global__ void sum(float *total, const float *x, unsigned long long n, unsigned long long stride) {
  __shared__ float scratch[SCRATCH];
  float acc = 0.0f;
  for (unsigned long long j = global_index(); j < n; j += stride) acc += x[j];
  float block = block_sum(acc, scratch);
  if (threadIdx.x == 0) atomicAdd(total, block);
}

// A 16-tap FIR filter, y[i] = sum over k of taps[k] * x[i + k] for n outputs over n + 15
// inputs, with the taps read from global memory, as our `fir16` reads them from a slice.
extern "C" __global__ void fir16(float *y, const float *x, const float *taps, unsigned long long n) {
  unsigned long long i = global_index();
  if (i < n) {
    float acc = 0.0f;
#pragma unroll
    for (int k = 0; k < 16; ++k) acc = fmaf(taps[k], x[i + k], acc);
    y[i] = acc;
  }
}

// The taps of `fir16_const`: (k % 5) / 8 - 1/4, as FIR_TAPS in main.rs and fir.cu's.
__constant__ float fir_taps[16] = {-0.25f, -0.125f, 0.0f,    0.125f, 0.25f, -0.25f, -0.125f, 0.0f,
                                   0.125f, 0.25f,   -0.25f,  -0.125f, 0.0f, 0.125f, 0.25f,   -0.25f};

// `fir16` with the taps in constant memory, as fir.cu has them (our `fir16_const` has
// them as a constant array in the kernel).
extern "C" __global__ void fir16_const(float *y, const float *x, unsigned long long n) {
  unsigned long long i = global_index();
  if (i < n) {
    float acc = 0.0f;
#pragma unroll
    for (int k = 0; k < 16; ++k) acc = fmaf(fir_taps[k], x[i + k], acc);
    y[i] = acc;
  }
}

// A 7-point stencil over the interior of an nx x ny x nz grid (x fastest): one thread
// per interior point, the first at (1, 1, 1), in 32x4x2 blocks; the faces are not
// written.
extern "C" __global__ void stencil7(float *y, const float *x, unsigned long long nx, unsigned long long ny,
                                    unsigned long long nz) {
  unsigned long long i = 1 + (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
  unsigned long long j = 1 + (unsigned long long)blockIdx.y * blockDim.y + threadIdx.y;
  unsigned long long k = 1 + (unsigned long long)blockIdx.z * blockDim.z + threadIdx.z;
  if (i < nx - 1 && j < ny - 1 && k < nz - 1) {
    unsigned long long plane = nx * ny;
    unsigned long long c = k * plane + j * nx + i;
    float around = x[c - 1] + x[c + 1] + x[c - nx] + x[c + nx] + x[c - plane] + x[c + plane];
    y[c] = 0.25f * x[c] + 0.125f * around;
  }
}

// A Jacobi sweep over the interior of a w-wide, h-high grid: each interior point becomes
// the average of its four neighbours. One thread per interior point, the first at
// (row 1, column 1), in 16x16 blocks; the edges are not written.
extern "C" __global__ void jacobi(float *next, const float *grid, unsigned long long w, unsigned long long h) {
  unsigned long long col = 1 + (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
  unsigned long long row = 1 + (unsigned long long)blockIdx.y * blockDim.y + threadIdx.y;
  if (row < h - 1 && col < w - 1) {
    unsigned long long i = row * w + col;
    float sum = grid[i - w] + grid[i + w] + grid[i - 1] + grid[i + 1];
    next[i] = 0.25f * sum;
  }
}

// A 5-point relaxation over the whole grid, neighbours past an edge clamped to it: half
// the centre plus an eighth of each neighbour. One thread per point, in 16x16 blocks.
extern "C" __global__ void stencil5(float *next, const float *grid, unsigned long long w, unsigned long long h) {
  unsigned long long col = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
  unsigned long long row = (unsigned long long)blockIdx.y * blockDim.y + threadIdx.y;
  if (row < h && col < w) {
    unsigned long long up = row > 0 ? row - 1 : 0;
    unsigned long long down = row + 1 < h ? row + 1 : h - 1;
    unsigned long long left = col > 0 ? col - 1 : 0;
    unsigned long long right = col + 1 < w ? col + 1 : w - 1;
    float centre = grid[row * w + col];
    float around = grid[up * w + col] + grid[down * w + col] + grid[row * w + left] + grid[row * w + right];
    next[row * w + col] = 0.5f * centre + 0.125f * around;
  }
}

// C = A * B for row-major n x n float matrices, as matmul.cu: 16x16 blocks, each thread
// one element of C, walking k through 16x16 shared tiles of A and B (zero past n).
extern "C" __global__ void matmul_f32(const float *A, const float *B, float *C, unsigned long long n) {
  __shared__ float ta[16][16];
  __shared__ float tb[16][16];
  const unsigned tx = threadIdx.x, ty = threadIdx.y;
  const unsigned long long row = (unsigned long long)blockIdx.y * 16 + ty;
  const unsigned long long col = (unsigned long long)blockIdx.x * 16 + tx;
  float acc = 0.0f;
  for (unsigned long long t = 0; t < n; t += 16) {
    ta[ty][tx] = (row < n && t + tx < n) ? A[row * n + t + tx] : 0.0f;
    tb[ty][tx] = (col < n && t + ty < n) ? B[(t + ty) * n + col] : 0.0f;
    __syncthreads();
    for (unsigned k = 0; k < 16; ++k) acc = fmaf(ta[ty][k], tb[k][tx], acc);
    __syncthreads();
  }
  if (row < n && col < n) C[row * n + col] = acc;
}

// `matmul_f32` in double precision.
extern "C" __global__ void matmul_f64(const double *A, const double *B, double *C, unsigned long long n) {
  __shared__ double ta[16][16];
  __shared__ double tb[16][16];
  const unsigned tx = threadIdx.x, ty = threadIdx.y;
  const unsigned long long row = (unsigned long long)blockIdx.y * 16 + ty;
  const unsigned long long col = (unsigned long long)blockIdx.x * 16 + tx;
  double acc = 0.0;
  for (unsigned long long t = 0; t < n; t += 16) {
    ta[ty][tx] = (row < n && t + tx < n) ? A[row * n + t + tx] : 0.0;
    tb[ty][tx] = (col < n && t + ty < n) ? B[(t + ty) * n + col] : 0.0;
    __syncthreads();
    for (unsigned k = 0; k < 16; ++k) acc = fma(ta[ty][k], tb[k][tx], acc);
    __syncthreads();
  }
  if (row < n && col < n) C[row * n + col] = acc;
}

// The inclusive scan of each block of 256 elements in shared memory (Hillis and Steele:
// eight doubling steps, two barriers each). Elements past n count as 0.
extern "C" __global__ void block_scan(float *y, const float *x, unsigned long long n) {
  __shared__ float tile[256];
  const unsigned t = threadIdx.x;
  unsigned long long i = global_index();
  tile[t] = i < n ? x[i] : 0.0f;
  __syncthreads();
  for (unsigned s = 1; s < 256; s *= 2) {
    float add = t >= s ? tile[t - s] : 0.0f;
    __syncthreads();
    tile[t] += add;
    __syncthreads();
  }
  if (i < n) y[i] = tile[t];
}

// A 256-bin histogram of the words' low bytes: one global atomic add per element into
// bins, which is zeroed before each launch.
extern "C" __global__ void histogram256(unsigned int *bins, const unsigned int *x, unsigned long long n) {
  unsigned long long i = global_index();
  if (i < n) atomicAdd(&bins[x[i] & 255u], 1u);
}

// The softmax of each row of 256 values: one row per block of 256 threads, one value per
// thread; the row's maximum and the sum of its exponentials as `block_max` and
// `block_sum`. expf is the accurate one (no --use_fast_math), as our `exp` is
// libdevice's __nv_expf.
extern "C" __global__ void softmax_rows(float *y, const float *x, unsigned long long n) {
  __shared__ float scratch[SCRATCH];
  unsigned long long i = global_index();
  float v = i < n ? x[i] : __int_as_float((int)0xff800000u);  // -infinity past the end
  float top = block_max(v, scratch);
  float e = expf(v - top);
  float total = block_sum(e, scratch);
  if (i < n) y[i] = e / total;
}

// softmax_rows over bf16 values, computed in float, each result rounded once.
extern "C" __global__ void softmax_rows_bf16(__nv_bfloat16 *y, const __nv_bfloat16 *x,
                                             unsigned long long n) {
  __shared__ float scratch[SCRATCH];
  unsigned long long i = global_index();
  float v = i < n ? __bfloat162float(x[i]) : __int_as_float((int)0xff800000u);
  float top = block_max(v, scratch);
  float e = expf(v - top);
  float total = block_sum(e, scratch);
  if (i < n) y[i] = __float2bfloat16_rn(e / total);
}
