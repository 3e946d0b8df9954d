#!/usr/bin/env bash
# Runs the benchmarks on a CUDA machine: each offload kernel next to its CUDA C++
# baseline (and saxpy next to a device-to-device copy), after the checks and the
# conformance suite; then the benchmark suite (`offload-bench suite`, every kernel of
# cuda/suite.cu next to ours in one process), which writes suite.json, ratio.svg and
# bandwidth.svg into SUITE_DIR (default: a new temporary directory). Needs nvcc there
# and the `offload-bench` binary built here, self-contained (`MLIR_SYS_LINK_SHARED=0
# CARGO_TARGET_DIR=target/static cargo build --release -p offload-bench`).
#   tools/bench/run-gpu.sh PATH/TO/offload-bench [N] [REPS] [SUITE_DIR]
set -euo pipefail
bench=${1:?path to offload-bench}
n=${2:-268435456}
reps=${3:-50}
here=$(cd "$(dirname "$0")" && pwd)
out=$(mktemp -d)
suite_dir=${4:-$(mktemp -d)}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader || true
for baseline in saxpy reduce matmul fir launch streams; do
  nvcc -O3 -arch=sm_90 "$here/cuda/$baseline.cu" -o "$out/${baseline}_cuda"
done
"$bench" check
"$bench" conformance
"$bench" saxpy "$n" "$reps"
"$out/saxpy_cuda" "$n" "$reps"
"$bench" reduce "$n" "$reps"
"$out/reduce_cuda" "$n" "$reps"
"$bench" matmul 4096 "$reps"
"$out/matmul_cuda" 4096 "$reps"
"$bench" fir 67108864 "$reps"
"$out/fir_cuda" 67108864 "$reps"
# Small launches and host data, ours next to cuda/launch.cu's figures in one table.
"$bench" launch "$out/launch_cuda" 200
# Streams, events and graphs: ours next to cuda/streams.cu's figures in one table.
"$bench" streams "$out/streams_cuda" "$reps"
# The suite's CUDA C++ twins are loaded as PTX by offload-bench itself, so that both
# sides share one process and one timing method.
nvcc -O3 -arch=sm_90 -ptx "$here/cuda/suite.cu" -o "$out/suite.ptx"
# cuBLAS (the GEMM roof) is opened at run time by name: let the loader find the
# toolkit's copy if it is not on its path already (without it the roof is skipped).
cuda_lib=$(cd "$(dirname "$(command -v nvcc)")/.." && pwd)/lib64
if [ -d "$cuda_lib" ]; then
  export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$cuda_lib"
fi
# The tensor-core bf16 GEMM next to cuBLAS (which it needs).
"$bench" tensor-gemm "$reps"
"$bench" suite "$out/suite.ptx" "$suite_dir" "$reps"
echo "suite: suite.json, ratio.svg and bandwidth.svg are in $suite_dir"
