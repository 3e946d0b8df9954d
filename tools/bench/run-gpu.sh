#!/usr/bin/env bash
# Runs the benchmarks on a CUDA machine: each offload kernel next to its CUDA C++
# baseline (and saxpy next to a device-to-device copy), after the checks and the
# conformance suite. Needs nvcc there and the `offload-bench` binary built here
# (`cargo build --release -p offload-bench`).
#   tools/bench/run-gpu.sh PATH/TO/offload-bench [N] [REPS]
set -euo pipefail
bench=${1:?path to offload-bench}
n=${2:-268435456}
reps=${3:-50}
here=$(cd "$(dirname "$0")" && pwd)
out=$(mktemp -d)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader || true
for baseline in saxpy reduce matmul fir; do
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
