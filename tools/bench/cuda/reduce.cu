// The CUDA C++ baseline for `offload-bench reduce`: the sum of n floats, with the same
// algorithm, launch geometry and timing method. Geometry: 256 threads per block,
// grid = min(ceil(n/256), 132*16) blocks; each thread accumulates a grid-stride loop
// (stride = grid*256, passed as an argument), then a warp butterfly (__shfl_xor_sync,
// offsets 16,8,4,2,1) so every lane holds its warp's sum; every thread stores that into a
// 256-float shared tile, and after __syncthreads() every warp butterflies tile[lane*32]
// (lanes 0..7, zero elsewhere) to get the block sum; thread 0 atomicAdds it into one float.
// Timing: CUDA events, median of REPS after 3 warm-up launches; the cudaMemsetAsync that
// zeroes the total before each launch lies inside the timed region (between the events).
// Build: nvcc -O3 -arch=sm_90 reduce.cu -o reduce_cuda
// Usage: reduce_cuda [n (default 1<<28)] [reps (default 50)]
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CHECK(call)                                                              \
  do {                                                                           \
    cudaError_t err_ = (call);                                                   \
    if (err_ != cudaSuccess) {                                                   \
      std::fprintf(stderr, "%s failed: %s\n", #call, cudaGetErrorString(err_));  \
      std::exit(1);                                                              \
    }                                                                            \
  } while (0)

constexpr unsigned kBlock = 256;  // the tile[lane * 32] step below assumes 8 warps

__device__ __forceinline__ float warp_sum(float v) {
  for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
  return v;
}

__global__ void reduce_sum(const float *x, size_t n, size_t stride, float *total) {
  __shared__ float tile[kBlock];
  float acc = 0.0f;
  for (size_t j = (size_t)blockIdx.x * kBlock + threadIdx.x; j < n; j += stride) acc += x[j];
  acc = warp_sum(acc);
  tile[threadIdx.x] = acc;
  __syncthreads();
  unsigned lane = threadIdx.x % 32;
  float w = lane < 8 ? tile[lane * 32] : 0.0f;
  w = warp_sum(w);
  if (threadIdx.x == 0) atomicAdd(total, w);
}

int main(int argc, char **argv) {
  size_t n = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : (size_t)1 << 28;
  int reps = argc > 2 ? std::atoi(argv[2]) : 50;
  if (n == 0 || reps < 1) {
    std::fprintf(stderr, "usage: %s [n >= 1] [reps >= 1]\n", argv[0]);
    return 2;
  }
  std::vector<float> x(n);
  for (size_t i = 0; i < n; ++i) x[i] = (float)((i * 7919) % 10007) * 0.001f - 5.0f;
  float *dx, *dtotal;
  CHECK(cudaMalloc(&dx, n * sizeof(float)));
  CHECK(cudaMalloc(&dtotal, sizeof(float)));
  CHECK(cudaMemcpy(dx, x.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  const unsigned block = kBlock;
  const unsigned grid = (unsigned)std::min((n + block - 1) / block, (size_t)132 * 16);
  const size_t stride = (size_t)grid * block;

  // One checked launch against the host reference first.
  CHECK(cudaMemsetAsync(dtotal, 0, sizeof(float)));
  reduce_sum<<<grid, block>>>(dx, n, stride, dtotal);
  CHECK(cudaGetLastError());
  float gpu;
  CHECK(cudaMemcpy(&gpu, dtotal, sizeof(float), cudaMemcpyDeviceToHost));
  double ref = 0.0, abs_sum = 0.0;
  for (size_t i = 0; i < n; ++i) {
    ref += (double)x[i];
    abs_sum += std::fabs((double)x[i]);
  }
  // The GPU sums in float in a different order (and atomics make it nondeterministic):
  // allow a relative error of 1e-4 of the sum of absolute values.
  double diff = std::fabs((double)gpu - ref);
  double tol = 1e-4 * abs_sum;
  bool ok = diff <= tol;
  std::printf("check: cuda c++ reduce n=%zu grid=%u block=%u: gpu %.6f host %.6f (|diff| %.6g, tol %.6g): %s\n", n,
              grid, block, (double)gpu, ref, diff, tol, ok ? "ok" : "MISMATCH");

  cudaEvent_t start, end;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&end));
  for (int i = 0; i < 3; ++i) {
    CHECK(cudaMemsetAsync(dtotal, 0, sizeof(float)));
    reduce_sum<<<grid, block>>>(dx, n, stride, dtotal);
  }
  std::vector<float> times;
  for (int r = 0; r < reps; ++r) {
    CHECK(cudaEventRecord(start));
    CHECK(cudaMemsetAsync(dtotal, 0, sizeof(float)));
    reduce_sum<<<grid, block>>>(dx, n, stride, dtotal);
    CHECK(cudaEventRecord(end));
    CHECK(cudaEventSynchronize(end));
    CHECK(cudaGetLastError());
    float ms;
    CHECK(cudaEventElapsedTime(&ms, start, end));
    times.push_back(ms);
  }
  std::sort(times.begin(), times.end());
  double median = times[times.size() / 2];
  std::printf("%-28s n=%zu median %.4f ms  %.1f GB/s  (min %.4f ms, %d reps)\n", "cuda c++ reduce kernel", n, median,
              4.0 * n / median / 1e6, times[0], reps);
  CHECK(cudaFree(dx));
  CHECK(cudaFree(dtotal));
  return ok ? 0 : 1;
}
