// The CUDA C++ side of `offload-bench streams`: what a CUDA programmer writes to overlap
// copies with kernels, to cut launch cost with a graph, and to run two kernels side by
// side, timed with the host clock (steady_clock, around each whole repetition including
// its final synchronise). It prints one `name value` line per figure, which offload-bench
// reads and sets next to its own:
//   pipeline_serial_ms  2^29 floats (2 GiB) of input x and output y in page-locked host
//                       memory (cudaMallocHost, allocated and filled once outside the
//                       timing: x[i] = (float)(i % 1000) * 0.25f, y zeroed), one device
//                       buffer d of 2^29 floats; 8 chunks of 2^26 floats. One blocking
//                       stream (cudaStreamCreate); for each chunk in order: cudaMemcpyAsync
//                       the chunk of x into d, kernel scale over it (d[i] = d[i] * 2.0f +
//                       1.0f, 256 threads per block, ceil(n / 256) blocks), cudaMemcpyAsync
//                       the chunk of d into y; then cudaStreamSynchronize
//   pipeline_ms         the same, but chunk c is issued on stream c % 2 of two blocking
//                       streams; then synchronise both. Afterwards y (every 4097th element
//                       and the last) must equal x * 2 + 1 exactly, else exit(1)
//   step_launches_us    device x and y of 2^20 floats (x = 1, y = 0); one step = 100
//                       launches of axpy (y[i] = 0.5f * x[i] + y[i], 256 threads per block,
//                       4096 blocks) on one blocking stream, then cudaStreamSynchronize
//   step_graph_us       the same 100 launches captured once into a CUDA graph
//                       (cudaStreamCaptureModeThreadLocal, instantiated with flags 0);
//                       one step = cudaGraphLaunch on that stream + cudaStreamSynchronize
//   busy_sms            the device's multiprocessor count (an integer)
//   busy_one_ms         kernel spin (each thread: v = threadIdx.x * 1e-3f, then ITERS
//                       dependent v = v * 0.999999f + 0.5f, out[global index] = v) in
//                       busy_sms / 2 blocks of 1024 threads; A then B (separate outputs)
//                       on one blocking stream, then synchronise
//   busy_two_ms         A on one blocking stream, B on another, then synchronise both
// pipeline_* and busy_* are milliseconds, the median of REPS repetitions after 1 warm-up
// one; step_* are microseconds per step, the median of REPS * 10 steps after 3 warm-ups.
// Build: nvcc -O3 -arch=sm_90 streams.cu -o streams_cuda
// Usage: streams_cuda [reps (default 10)] [iters (default 2^18)]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
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
constexpr unsigned kSpinBlock = 1024;
constexpr int kDefaultIters = 1 << 18;

__global__ void scale(float *d, size_t n) {
  size_t i = (size_t)blockIdx.x * kBlock + threadIdx.x;
  if (i < n) d[i] = d[i] * 2.0f + 1.0f;
}

__global__ void axpy(float *y, const float *x, size_t n) {
  size_t i = (size_t)blockIdx.x * kBlock + threadIdx.x;
  if (i < n) y[i] = 0.5f * x[i] + y[i];
}

__global__ void spin(float *out, int iters) {
  float v = threadIdx.x * 1e-3f;

  for (int k = 0; k < iters; ++k) v = v * 0.999999f + 0.5f;
  out[(size_t)blockIdx.x * blockDim.x + threadIdx.x] = v;
}

static double now_us() {
  return std::chrono::duration<double, std::micro>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Median wall time in microseconds of `reps` calls of f, after `warm` untimed ones.
template <class F>
static double median_us(int warm, int reps, F f) {
  for (int i = 0; i < warm; ++i) f();
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
  int reps = argc > 1 ? std::atoi(argv[1]) : 10;
  int iters = argc > 2 ? std::atoi(argv[2]) : kDefaultIters;
  if (reps < 1 || iters < 1) {
    std::fprintf(stderr, "usage: %s [reps >= 1] [iters >= 1]\n", argv[0]);
    return 2;
  }
  CHECK(cudaFree(nullptr));  // the context, outside every timing
  cudaStream_t s[2];
  CHECK(cudaStreamCreate(&s[0]));  // blocking streams
  CHECK(cudaStreamCreate(&s[1]));

  {  // pipeline_serial_ms, pipeline_ms
    const size_t total = (size_t)1 << 29;
    const size_t chunk = (size_t)1 << 26;
    const int chunks = (int)(total / chunk);
    float *x, *y, *d;
    CHECK(cudaMallocHost(&x, total * sizeof(float)));
    CHECK(cudaMallocHost(&y, total * sizeof(float)));
    CHECK(cudaMalloc(&d, total * sizeof(float)));
    for (size_t i = 0; i < total; ++i) x[i] = (float)(i % 1000) * 0.25f;
    std::memset(y, 0, total * sizeof(float));

    auto pipeline = [&](int nstreams) {
      for (int c = 0; c < chunks; ++c) {
        cudaStream_t st = s[c % nstreams];
        size_t off = (size_t)c * chunk;
        CHECK(cudaMemcpyAsync(d + off, x + off, chunk * sizeof(float),
                              cudaMemcpyHostToDevice, st));
        scale<<<blocks(chunk), kBlock, 0, st>>>(d + off, chunk);
        CHECK(cudaMemcpyAsync(y + off, d + off, chunk * sizeof(float),
                              cudaMemcpyDeviceToHost, st));
      }
      for (int k = 0; k < nstreams; ++k) CHECK(cudaStreamSynchronize(s[k]));
    };
    double serial = median_us(1, reps, [&] { pipeline(1); });
    std::printf("pipeline_serial_ms %.3f\n", serial / 1e3);
    double overlapped = median_us(1, reps, [&] { pipeline(2); });
    std::printf("pipeline_ms %.3f\n", overlapped / 1e3);
    CHECK(cudaGetLastError());

    auto check = [&](size_t i) {
      float want = x[i] * 2.0f + 1.0f;
      if (y[i] != want) {
        std::fprintf(stderr, "pipeline: y[%zu] = %f, want %f\n", i, y[i], want);
        std::exit(1);
      }
    };
    for (size_t i = 0; i < total; i += 4097) check(i);
    check(total - 1);
    CHECK(cudaFree(d));
    CHECK(cudaFreeHost(x));
    CHECK(cudaFreeHost(y));
  }

  {  // step_launches_us, step_graph_us
    const size_t n = (size_t)1 << 20;
    const int launches = 100;
    std::vector<float> ones(n, 1.0f);
    float *x, *y;
    CHECK(cudaMalloc(&x, n * sizeof(float)));
    CHECK(cudaMalloc(&y, n * sizeof(float)));
    CHECK(cudaMemcpy(x, ones.data(), n * sizeof(float), cudaMemcpyHostToDevice));
    CHECK(cudaMemset(y, 0, n * sizeof(float)));
    cudaStream_t st = s[0];

    double plain = median_us(3, reps * 10, [&] {
      for (int k = 0; k < launches; ++k) axpy<<<blocks(n), kBlock, 0, st>>>(y, x, n);
      CHECK(cudaStreamSynchronize(st));
    });
    std::printf("step_launches_us %.3f\n", plain);
    CHECK(cudaGetLastError());

    cudaGraph_t graph;
    cudaGraphExec_t exec;
    CHECK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
    for (int k = 0; k < launches; ++k) axpy<<<blocks(n), kBlock, 0, st>>>(y, x, n);
    CHECK(cudaStreamEndCapture(st, &graph));
    CHECK(cudaGetLastError());
    CHECK(cudaGraphInstantiate(&exec, graph, 0));

    double graphed = median_us(3, reps * 10, [&] {
      CHECK(cudaGraphLaunch(exec, st));
      CHECK(cudaStreamSynchronize(st));
    });
    std::printf("step_graph_us %.3f\n", graphed);
    CHECK(cudaGraphExecDestroy(exec));
    CHECK(cudaGraphDestroy(graph));
    CHECK(cudaFree(x));
    CHECK(cudaFree(y));
  }

  {  // busy_sms, busy_one_ms, busy_two_ms
    int sms = 0;
    CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    std::printf("busy_sms %d\n", sms);
    const unsigned grid = (unsigned)std::max(sms / 2, 1);
    const size_t n = (size_t)grid * kSpinBlock;
    float *a, *b;
    CHECK(cudaMalloc(&a, n * sizeof(float)));
    CHECK(cudaMalloc(&b, n * sizeof(float)));

    double one = median_us(1, reps, [&] {
      spin<<<grid, kSpinBlock, 0, s[0]>>>(a, iters);
      spin<<<grid, kSpinBlock, 0, s[0]>>>(b, iters);
      CHECK(cudaStreamSynchronize(s[0]));
    });
    std::printf("busy_one_ms %.3f\n", one / 1e3);
    double two = median_us(1, reps, [&] {
      spin<<<grid, kSpinBlock, 0, s[0]>>>(a, iters);
      spin<<<grid, kSpinBlock, 0, s[1]>>>(b, iters);
      CHECK(cudaStreamSynchronize(s[0]));
      CHECK(cudaStreamSynchronize(s[1]));
    });
    std::printf("busy_two_ms %.3f\n", two / 1e3);
    CHECK(cudaGetLastError());
    CHECK(cudaFree(a));
    CHECK(cudaFree(b));
  }

  CHECK(cudaStreamDestroy(s[0]));
  CHECK(cudaStreamDestroy(s[1]));
  CHECK(cudaGetLastError());
  return 0;
}
