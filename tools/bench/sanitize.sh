#!/usr/bin/env bash
# Runs the conformance suite, every example and a slice of the GPU fuzz corpus under each
# of NVIDIA compute-sanitizer's four tools (memcheck, racecheck, initcheck, synccheck) on a
# CUDA machine, and prints per tool how many kernels ran and how many hazards it found.
# Needs `compute-sanitizer` (CUDA toolkit) there and the `offload-bench` binary built
# here (`cargo build --release -p offload-bench`).
#   tools/bench/sanitize.sh PATH/TO/offload-bench [FUZZ_START] [FUZZ_END] [SHARDS] [LOG_DIR]
# The fuzz seeds FUZZ_START..FUZZ_END (default 0..5000) are split into SHARDS ranges
# (default 4) per tool; every run is its own process, and they run side by side. Each
# run's output is kept in LOG_DIR (default: a new temporary directory). Exits non-zero if
# any tool found a hazard or any run failed.
set -euo pipefail
bench=$(realpath "${1:?path to offload-bench}")
start=${2:-0}
end=${3:-5000}
shards=${4:-4}
logs=${5:-$(mktemp -d)}
mkdir -p "$logs"
sanitizer=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
tools=(memcheck racecheck initcheck synccheck)

# One line per run: TOOL NAME ARGS...
runs=()
for tool in "${tools[@]}"; do
  runs+=("$tool conformance conformance" "$tool examples examples")
  for ((s = 0; s < shards; s++)); do
    a=$((start + (end - start) * s / shards))
    b=$((start + (end - start) * (s + 1) / shards))
    runs+=("$tool fuzz-$a-$b fuzz $a $b")
  done
done

run_one() { # TOOL NAME ARGS... -> LOG_DIR/TOOL.NAME.log and .rc
  local tool=$1 name=$2
  shift 2
  local rc=0
  # Failed driver calls are the runtime's to report, as `Err`s the runs check (the
  # conformance suite asks for more memory than the GPU has on purpose).
  "$sanitizer" --tool "$tool" --print-limit 20 --report-api-errors no "$bench" "$@" \
    >"$logs/$tool.$name.log" 2>&1 || rc=$?
  echo "$rc" >"$logs/$tool.$name.rc"
}
export -f run_one
export sanitizer bench logs
printf '%s\n' "${runs[@]}" | xargs -P "$(nproc)" -I{} bash -c 'run_one {}'

# Per tool: kernels run (the launches each run reports), hazards (compute-sanitizer's
# error summaries, and racecheck's warnings too), runs that failed.
status=0
printf '%-10s %12s %8s %12s\n' tool "kernels run" hazards "runs failed"
for tool in "${tools[@]}"; do
  kernels=0 hazards=0 failed=0
  for log in "$logs/$tool".*.log; do
    n=$( (grep -o '^launches: [0-9]*' "$log" || true) | awk '{n = $2} END {print n + 0}')
    kernels=$((kernels + n))
    e=$( (grep -o 'ERROR SUMMARY: [0-9]*' "$log" || true) | awk '{s += $3} END {print s + 0}')
    w=$( (grep -o '[0-9]* warnings)' "$log" || true) | awk '{s += $1} END {print s + 0}')
    hazards=$((hazards + e + w))
    if [ "$(cat "${log%.log}.rc")" != 0 ]; then
      failed=$((failed + 1))
    fi
  done
  printf '%-10s %12d %8d %12d\n' "$tool" "$kernels" "$hazards" "$failed"
  if ((hazards > 0 || failed > 0)); then status=1; fi
done
# What each hazard or failure was: the first reports of every run that had one.
for log in "$logs"/*.log; do
  if grep -q 'ERROR SUMMARY: [1-9]\|[1-9][0-9]* warnings)' "$log" ||
     [ "$(cat "${log%.log}.rc")" != 0 ]; then
    echo "== $(basename "$log" .log) (exit $(cat "${log%.log}.rc"))"
    grep -E '^=========|FAILED|failed|Error' "$log" | head -40
  fi
done
echo "logs: $logs"
exit "$status"
