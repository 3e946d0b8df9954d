// The CUDA C++ baseline for `offload-bench matmul`: C = A*B for square row-major n x n
// float matrices, with the same algorithm, launch geometry and timing method. Geometry:
// block dim3(16,16), grid dim3(ceil(n/16), ceil(n/16)); each thread computes one C
// element, walking k in steps of 16 through two 16x16 shared tiles (ta from A's rows,
// tb from B's columns, zero-padded past n), with __syncthreads() around each tile's
// 16-term inner product. Timing: CUDA events, median of REPS after 3 warm-up launches.
// The check samples 64 (row, col) pairs against a double-precision host reference.
// Build: nvcc -O3 -arch=sm_90 matmul.cu -o matmul_cuda
// Usage: matmul_cuda [n (default 4096)] [reps (default 50)]
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

constexpr unsigned kTile = 16;

__global__ void matmul(const float *A, const float *B, float *C, size_t n) {
  __shared__ float ta[kTile][kTile];
  __shared__ float tb[kTile][kTile];
  const unsigned tx = threadIdx.x, ty = threadIdx.y;
  const size_t row = (size_t)blockIdx.y * kTile + ty;
  const size_t col = (size_t)blockIdx.x * kTile + tx;
  float acc = 0.0f;
  for (size_t t = 0; t < n; t += kTile) {
    ta[ty][tx] = (row < n && t + tx < n) ? A[row * n + t + tx] : 0.0f;
    tb[ty][tx] = (col < n && t + ty < n) ? B[(t + ty) * n + col] : 0.0f;
    __syncthreads();
    for (unsigned k = 0; k < kTile; ++k) acc += ta[ty][k] * tb[k][tx];
    __syncthreads();
  }
  if (row < n && col < n) C[row * n + col] = acc;
}

int main(int argc, char **argv) {
  size_t n = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : (size_t)4096;
  int reps = argc > 2 ? std::atoi(argv[2]) : 50;
  if (n == 0 || reps < 1) {
    std::fprintf(stderr, "usage: %s [n >= 1] [reps >= 1]\n", argv[0]);
    return 2;
  }
  const size_t nn = n * n;
  std::vector<float> a(nn), b(nn);
  for (size_t i = 0; i < nn; ++i) {
    a[i] = (float)((i * 7919) % 101) * 0.01f - 0.5f;
    b[i] = (float)((i * 104729) % 103) * 0.01f - 0.5f;
  }
  float *da, *db, *dc;
  CHECK(cudaMalloc(&da, nn * sizeof(float)));
  CHECK(cudaMalloc(&db, nn * sizeof(float)));
  CHECK(cudaMalloc(&dc, nn * sizeof(float)));
  CHECK(cudaMemcpy(da, a.data(), nn * sizeof(float), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(db, b.data(), nn * sizeof(float), cudaMemcpyHostToDevice));
  const dim3 block(kTile, kTile);
  const unsigned tiles = (unsigned)((n + kTile - 1) / kTile);
  const dim3 grid(tiles, tiles);

  // One checked launch against the host reference first, at 64 sampled elements.
  matmul<<<grid, block>>>(da, db, dc, n);
  CHECK(cudaGetLastError());
  std::vector<float> c(nn);
  CHECK(cudaMemcpy(c.data(), dc, nn * sizeof(float), cudaMemcpyDeviceToHost));
  const int samples = 64;
  int wrong = 0;
  for (unsigned s = 0; s < (unsigned)samples; ++s) {
    size_t row = (size_t)(s * 2654435761u) % n;
    size_t col = (size_t)(s * 40503u) % n;
    double ref = 0.0, mag = 0.0;
    for (size_t k = 0; k < n; ++k) {
      double term = (double)a[row * n + k] * (double)b[k * n + col];
      ref += term;
      mag += std::fabs(term);
    }
    double got = (double)c[row * n + col];
    if (std::fabs(got - ref) > 1e-3 * mag) {
      ++wrong;
      std::printf("  mismatch at (%zu, %zu): gpu %.6f host %.6f (tol %.6g)\n", row, col, got, ref, 1e-3 * mag);
    }
  }
  std::printf("check: cuda c++ matmul n=%zu grid=%ux%u block=%ux%u: %d of %d sampled elements mismatch\n", n, grid.x,
              grid.y, block.x, block.y, wrong, samples);

  cudaEvent_t start, end;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&end));
  for (int i = 0; i < 3; ++i) matmul<<<grid, block>>>(da, db, dc, n);
  std::vector<float> times;
  for (int r = 0; r < reps; ++r) {
    CHECK(cudaEventRecord(start));
    matmul<<<grid, block>>>(da, db, dc, n);
    CHECK(cudaEventRecord(end));
    CHECK(cudaEventSynchronize(end));
    CHECK(cudaGetLastError());
    float ms;
    CHECK(cudaEventElapsedTime(&ms, start, end));
    times.push_back(ms);
  }
  std::sort(times.begin(), times.end());
  double median = times[times.size() / 2];
  std::printf("%-28s n=%zu median %.4f ms  %.1f GFLOP/s  (min %.4f ms, %d reps)\n", "cuda c++ matmul kernel", n, median,
              2.0 * (double)n * (double)n * (double)n / median / 1e6, times[0], reps);
  CHECK(cudaFree(da));
  CHECK(cudaFree(db));
  CHECK(cudaFree(dc));
  return wrong == 0 ? 0 : 1;
}
