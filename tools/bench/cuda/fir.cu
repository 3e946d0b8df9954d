// The CUDA C++ baseline for `offload-bench fir`: a 16-tap FIR filter, y[i] = sum over k
// of taps[k] * x[i + k] for n outputs over n + 15 inputs, with the taps in `__constant__`
// memory. The same launch geometry (256 threads per block, one output per thread) and
// timing method (CUDA events, median of REPS after 3 warm-up launches) as offload's.
// Build: nvcc -O3 -arch=sm_90 fir.cu -o fir_cuda
// Usage: fir_cuda [n (default 1<<26)] [reps (default 50)]
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

constexpr int kTaps = 16;
__constant__ float taps[kTaps];

__global__ void fir(float *y, const float *x, size_t n) {
  size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    float acc = 0.0f;
#pragma unroll
    for (int k = 0; k < kTaps; ++k) acc = fmaf(taps[k], x[i + k], acc);
    y[i] = acc;
  }
}

int main(int argc, char **argv) {
  size_t n = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : (size_t)1 << 26;
  int reps = argc > 2 ? std::atoi(argv[2]) : 50;
  if (n == 0 || reps < 1) {
    std::fprintf(stderr, "usage: %s [n >= 1] [reps >= 1]\n", argv[0]);
    return 2;
  }
  std::vector<float> x(n + kTaps - 1), h(kTaps);
  for (size_t i = 0; i < x.size(); ++i) x[i] = (float)((i * 7919) % 10007) * 0.001f - 5.0f;
  for (int k = 0; k < kTaps; ++k) h[k] = (float)(k % 5) * 0.125f - 0.25f;
  float *dx, *dy;
  CHECK(cudaMalloc(&dx, x.size() * sizeof(float)));
  CHECK(cudaMalloc(&dy, n * sizeof(float)));
  CHECK(cudaMemcpy(dx, x.data(), x.size() * sizeof(float), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpyToSymbol(taps, h.data(), kTaps * sizeof(float)));
  const unsigned block = 256;
  const unsigned grid = (unsigned)((n + block - 1) / block);

  fir<<<grid, block>>>(dy, dx, n);
  CHECK(cudaGetLastError());
  std::vector<float> out(n);
  CHECK(cudaMemcpy(out.data(), dy, n * sizeof(float), cudaMemcpyDeviceToHost));
  size_t wrong = 0;
  for (size_t i = 0; i < n; ++i) {
    float ref = 0.0f;
    for (int k = 0; k < kTaps; ++k) ref = std::fma(h[k], x[i + k], ref);
    if (std::abs(out[i] - ref) > 1e-5f * std::max(1.0f, std::abs(ref))) ++wrong;
  }
  std::printf("check: cuda c++ fir n=%zu: %zu mismatches\n", n, wrong);

  cudaEvent_t start, end;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&end));
  for (int i = 0; i < 3; ++i) fir<<<grid, block>>>(dy, dx, n);
  std::vector<float> times;
  for (int r = 0; r < reps; ++r) {
    CHECK(cudaEventRecord(start));
    fir<<<grid, block>>>(dy, dx, n);
    CHECK(cudaEventRecord(end));
    CHECK(cudaEventSynchronize(end));
    CHECK(cudaGetLastError());
    float ms;
    CHECK(cudaEventElapsedTime(&ms, start, end));
    times.push_back(ms);
  }
  std::sort(times.begin(), times.end());
  double median = times[times.size() / 2];
  std::printf("%-28s n=%zu median %.4f ms  %.1f GB/s  (min %.4f ms, %d reps)\n", "cuda c++ fir kernel", n, median,
              8.0 * n / median / 1e6, times[0], reps);
  return wrong == 0 ? 0 : 1;
}
