#!/usr/bin/env bash
# Runs the saxpy benchmark on a CUDA machine: the offload kernel, a device-to-device copy
# and the CUDA C++ baseline, side by side. Needs nvcc there and the `offload-bench`
# binary built here (`cargo build --release -p offload-bench`).
#   tools/bench/run-gpu.sh PATH/TO/offload-bench [N] [REPS]
set -euo pipefail
bench=${1:?path to offload-bench}
n=${2:-268435456}
reps=${3:-50}
here=$(cd "$(dirname "$0")" && pwd)
out=$(mktemp -d)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader || true
nvcc -O3 -arch=sm_90 "$here/cuda/saxpy.cu" -o "$out/saxpy_cuda"
"$bench" check
"$bench" conformance
"$bench" saxpy "$n" "$reps"
"$out/saxpy_cuda" "$n" "$reps"
