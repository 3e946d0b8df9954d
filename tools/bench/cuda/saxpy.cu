// The CUDA C++ baseline for `offload-bench saxpy`: the same algorithm, launch geometry
// (256 threads per block, one element per thread) and timing method (CUDA events, median
// of REPS after 3 warm-up launches). Build: nvcc -O3 -arch=sm_90 saxpy.cu -o saxpy_cuda
#include <algorithm>
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

__global__ void saxpy(float *y, const float *x, float a, size_t n) {
  size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}

int main(int argc, char **argv) {
  size_t n = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : (size_t)1 << 28;
  int reps = argc > 2 ? std::atoi(argv[2]) : 50;
  std::vector<float> x(n), y(n);
  for (size_t i = 0; i < n; ++i) {
    x[i] = (float)((i * 7919) % 10007) * 0.25f - 1000.0f;
    y[i] = (float)((i * 104729) % 9973) * 0.5f;
  }
  float *dx, *dy;
  CHECK(cudaMalloc(&dx, n * sizeof(float)));
  CHECK(cudaMalloc(&dy, n * sizeof(float)));
  CHECK(cudaMemcpy(dx, x.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(dy, y.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  const float a = 1.5f;
  const unsigned block = 256;
  const unsigned grid = (unsigned)((n + block - 1) / block);

  // One checked launch against the host reference first.
  saxpy<<<grid, block>>>(dy, dx, a, n);
  CHECK(cudaGetLastError());
  std::vector<float> out(n);
  CHECK(cudaMemcpy(out.data(), dy, n * sizeof(float), cudaMemcpyDeviceToHost));
  size_t wrong = 0;
  for (size_t i = 0; i < n; ++i) {
    // nvcc contracts a*x+y into one fma by default; compare with a tolerance.
    float ref = a * x[i] + y[i];
    if (std::abs(out[i] - ref) > 1e-6f * std::max(1.0f, std::abs(ref))) ++wrong;
  }
  std::printf("check: cuda c++ saxpy n=%zu: %zu mismatches\n", n, wrong);

  cudaEvent_t start, end;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&end));
  for (int i = 0; i < 3; ++i) saxpy<<<grid, block>>>(dy, dx, a, n);
  std::vector<float> times;
  for (int r = 0; r < reps; ++r) {
    CHECK(cudaEventRecord(start));
    saxpy<<<grid, block>>>(dy, dx, a, n);
    CHECK(cudaEventRecord(end));
    CHECK(cudaEventSynchronize(end));
    CHECK(cudaGetLastError());
    float ms;
    CHECK(cudaEventElapsedTime(&ms, start, end));
    times.push_back(ms);
  }
  std::sort(times.begin(), times.end());
  double median = times[times.size() / 2];
  std::printf("%-28s n=%zu median %.4f ms  %.1f GB/s  (min %.4f ms, %d reps)\n", "cuda c++ saxpy kernel", n, median,
              12.0 * n / median / 1e6, times[0], reps);
  return wrong == 0 ? 0 : 1;
}
