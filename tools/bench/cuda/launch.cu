// The CUDA C++ side of `offload-bench launch`: what a CUDA programmer writes for small
// launches and for data that lives on the host, timed with the host clock. It prints one
// `name value` line per figure (microseconds), which offload-bench reads and sets next
// to its own:
//   launch_us          back-to-back <<<>>> launches of saxpy over 1024 floats in device
//                      memory, then one synchronise: time per launch
//   round_trip_us      cudaMemcpyAsync of one float in, the sum of 2^20 floats
//                      (reduce.cu's kernel) into it, cudaMemcpyAsync out, synchronise
//   host_saxpy_1m_us   pageable host vectors: cudaMemcpy x and y in, saxpy, cudaMemcpy y
//   host_saxpy_64m_us  out (device memory allocated once, outside the timing)
//   host_reduce_1m_us  pageable: cudaMemcpy 2^20 floats in, zero the total, the sum,
//                      cudaMemcpy the 4-byte total out
// Each figure but launch_us is the median of REPS repetitions after 3 warm-up ones.
// Build: nvcc -O3 -arch=sm_90 launch.cu -o launch_cuda
// Usage: launch_cuda [reps (default 200)]
#include <algorithm>
#include <chrono>
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

constexpr unsigned kBlock = 256;

__global__ void saxpy(float *y, const float *x, float a, size_t n) {
  size_t i = (size_t)blockIdx.x * kBlock + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}

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

static double now_us() {
  return std::chrono::duration<double, std::micro>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

template <class F>
static double median_us(int reps, F f) {
  for (int i = 0; i < 3; ++i) f();
  std::vector<double> t(reps);
  for (int i = 0; i < reps; ++i) {
    double start = now_us();
    f();
    t[i] = now_us() - start;
  }
  std::sort(t.begin(), t.end());
  return t[reps / 2];
}

static unsigned blocks(size_t n) { return (unsigned)((n + kBlock - 1) / kBlock); }

int main(int argc, char **argv) {
  int reps = argc > 1 ? std::atoi(argv[1]) : 200;
  if (reps < 1) {
    std::fprintf(stderr, "usage: %s [reps >= 1]\n", argv[0]);
    return 2;
  }
  CHECK(cudaFree(nullptr));  // the context, outside every timing

  {  // launch_us
    const size_t n = 1024;
    const int launches = 5000;
    float *x, *y;
    CHECK(cudaMalloc(&x, n * sizeof(float)));
    CHECK(cudaMalloc(&y, n * sizeof(float)));
    CHECK(cudaMemset(x, 0, n * sizeof(float)));
    CHECK(cudaMemset(y, 0, n * sizeof(float)));
    saxpy<<<blocks(n), kBlock>>>(y, x, 1.0f, n);
    CHECK(cudaDeviceSynchronize());
    double start = now_us();
    for (int i = 0; i < launches; ++i) saxpy<<<blocks(n), kBlock>>>(y, x, 1.0f, n);
    CHECK(cudaDeviceSynchronize());
    std::printf("launch_us %.3f\n", (now_us() - start) / launches);
    CHECK(cudaFree(x));
    CHECK(cudaFree(y));
  }

  const size_t m = (size_t)1 << 20;
  std::vector<float> xs(m);
  for (size_t i = 0; i < m; ++i) xs[i] = (float)(i % 1000) * 0.001f;
  const unsigned grid = std::min(blocks(m), 132u * 16u);
  const size_t stride = (size_t)grid * kBlock;
  float *dx, *dtotal;
  CHECK(cudaMalloc(&dx, m * sizeof(float)));
  CHECK(cudaMalloc(&dtotal, sizeof(float)));
  CHECK(cudaMemcpy(dx, xs.data(), m * sizeof(float), cudaMemcpyHostToDevice));
  float zero = 0.0f, total = 0.0f;

  double round_trip = median_us(reps, [&] {
    CHECK(cudaMemcpyAsync(dtotal, &zero, sizeof(float), cudaMemcpyHostToDevice));
    reduce_sum<<<grid, kBlock>>>(dx, m, stride, dtotal);
    CHECK(cudaMemcpyAsync(&total, dtotal, sizeof(float), cudaMemcpyDeviceToHost));
    CHECK(cudaStreamSynchronize(0));
  });
  std::printf("round_trip_us %.3f\n", round_trip);

  double host_reduce = median_us(reps, [&] {
    CHECK(cudaMemcpy(dx, xs.data(), m * sizeof(float), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(dtotal, &zero, sizeof(float), cudaMemcpyHostToDevice));
    reduce_sum<<<grid, kBlock>>>(dx, m, stride, dtotal);
    CHECK(cudaMemcpy(&total, dtotal, sizeof(float), cudaMemcpyDeviceToHost));
  });
  std::printf("host_reduce_1m_us %.3f\n", host_reduce);
  CHECK(cudaFree(dx));
  CHECK(cudaFree(dtotal));

  for (size_t n : {m, (size_t)64 << 20}) {
    std::vector<float> x(n, 1.0f), y(n, 2.0f);
    float *gx, *gy;
    CHECK(cudaMalloc(&gx, n * sizeof(float)));
    CHECK(cudaMalloc(&gy, n * sizeof(float)));
    double t = median_us(n > m ? std::max(reps / 10, 5) : reps, [&] {
      CHECK(cudaMemcpy(gx, x.data(), n * sizeof(float), cudaMemcpyHostToDevice));
      CHECK(cudaMemcpy(gy, y.data(), n * sizeof(float), cudaMemcpyHostToDevice));
      saxpy<<<blocks(n), kBlock>>>(gy, gx, 1.5f, n);
      CHECK(cudaMemcpy(y.data(), gy, n * sizeof(float), cudaMemcpyDeviceToHost));
    });
    std::printf("host_saxpy_%s_us %.3f\n", n == m ? "1m" : "64m", t);
    CHECK(cudaFree(gx));
    CHECK(cudaFree(gy));
  }
  CHECK(cudaGetLastError());
  return 0;
}
