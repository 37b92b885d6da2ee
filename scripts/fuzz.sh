#!/usr/bin/env bash
# scripts/fuzz.sh — builds the libFuzzer targets of core/fuzz and runs each on its seed corpus
# (docs/fuzzing.md).
#   scripts/fuzz.sh smoke   a fixed number of runs per target, from the seeds only, fixed seed
#                           (FUZZ_SMOKE_RUNS, default 200000): `make fuzz-smoke`, part of `make test`
#   scripts/fuzz.sh long    each target for FUZZ_SECONDS (default 300), or FUZZ_RUNS executions
#                           when set; the corpus it grows is kept in $FUZZ_BUILD/corpus-long: `make fuzz`
# One target at a time, each in one process (libFuzzer's default; -jobs/-workers would fork more):
# the machine may be shared.
# Environment: FUZZ_BUILD (build/fuzz), JOBS (build jobs, default nproc), FUZZ_CC and FUZZ_CXX
# (clang, clang++), LOGS (build/logs; one log per target there).
# Where clang or its libFuzzer runtime is missing it says so on a line starting
# "fuzz-smoke: skipped" (or "fuzz: skipped") and exits 0. It exits 1 when a target crashed,
# hung (-timeout), ran out of memory, leaked or broke a property; the input is then in
# $FUZZ_BUILD/artifacts. The last line sums up: "<mode>: N targets, E executions, C crashes".
set -euo pipefail
cd "$(dirname "$0")/.."

mode=${1:-smoke}
case $mode in
  smoke) name=fuzz-smoke ;;
  long) name=fuzz ;;
  *) echo "usage: $0 smoke|long" >&2; exit 2 ;;
esac
FUZZ_BUILD=${FUZZ_BUILD:-build/fuzz}
FUZZ_CC=${FUZZ_CC:-clang}
FUZZ_CXX=${FUZZ_CXX:-clang++}
JOBS=${JOBS:-$(nproc)}
LOGS=${LOGS:-build/logs}
TARGETS=(fuzz_wire fuzz_descriptor fuzz_admission fuzz_analysis fuzz_tensors)

# clang with the libFuzzer runtime (Debian: clang, libclang-rt-dev).
probe=$(mktemp -d)
trap 'rm -rf "$probe"' EXIT
echo 'extern "C" int LLVMFuzzerTestOneInput(const unsigned char*, unsigned long) { return 0; }' >"$probe/f.cc"
if ! command -v "$FUZZ_CXX" >/dev/null || ! command -v "$FUZZ_CC" >/dev/null; then
  echo "$name: skipped (no clang: apt-get install clang libclang-rt-dev)"
  exit 0
fi
if ! "$FUZZ_CXX" -fsanitize=fuzzer,address,undefined "$probe/f.cc" -o "$probe/f" >"$probe/log" 2>&1; then
  echo "$name: skipped ($FUZZ_CXX cannot link libFuzzer: apt-get install libclang-rt-dev; $(head -n 1 "$probe/log"))"
  exit 0
fi

mkdir -p "$LOGS"
echo "[$name] building the fuzz targets in $FUZZ_BUILD with $FUZZ_CXX (30 s to 1.5 minutes the first time on 2 cores; log: $LOGS/fuzz-build.log)"
if ! { CC=$FUZZ_CC CXX=$FUZZ_CXX cmake -S . -B "$FUZZ_BUILD" -DPAAM_BUILD_FUZZERS=ON -DPAAM_BUILD_TESTS=OFF \
         -DPAAM_WITH_CUDA=OFF -DPAAM_WITH_TORCH=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo &&
       cmake --build "$FUZZ_BUILD" -j "$JOBS" --target fuzzers; } >"$LOGS/fuzz-build.log" 2>&1; then
  echo "$name: failed to build; the last lines of $LOGS/fuzz-build.log:"
  tail -n 40 "$LOGS/fuzz-build.log"
  exit 1
fi

artifacts="$FUZZ_BUILD/artifacts"
mkdir -p "$artifacts"
total=0
crashes=0
# run_target NAME SEEDS SMOKE_RUNS COMMAND...: runs one target (a libFuzzer binary, or the
# atheris script, which takes libFuzzer's flags) on a working corpus and its seeds, and counts
# its executions and findings.
run_target() {
  local t=$1 seeds=$2 smoke_runs=$3 work log rc=0 before start secs execs found budget
  shift 3
  log="$LOGS/fuzz-$t.log"
  if [ "$mode" = smoke ]; then
    # A fresh working corpus each time: the same seeds, the same runs, the same result.
    work="$FUZZ_BUILD/corpus-smoke/$t"
    rm -rf "$work"
    budget=(-runs="$smoke_runs" -seed=1 -max_total_time=120)
  else
    work="$FUZZ_BUILD/corpus-long/$t"
    if [ -n "${FUZZ_RUNS:-}" ]; then budget=(-runs="$FUZZ_RUNS"); else budget=(-max_total_time="${FUZZ_SECONDS:-300}"); fi
  fi
  mkdir -p "$work"
  before=$(find "$artifacts" -type f | wc -l)
  start=$(date +%s)
  # -timeout: one input running this long is a hang (a finding). -rss_limit_mb: an input that
  # makes the code under test allocate this much is one too.
  "$@" "${budget[@]}" -timeout=25 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$artifacts/$t-" "$work" "$seeds" >"$log" 2>&1 || rc=$?
  secs=$(($(date +%s) - start))
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
  found=$(($(find "$artifacts" -type f | wc -l) - before))
  total=$((total + ${execs:-0}))
  if [ $rc -ne 0 ] || [ "$found" -gt 0 ]; then
    crashes=$((crashes + (found > 0 ? found : 1)))
    echo "$t: FAILED (exit $rc) after ${execs:-?} executions in ${secs} s; the input is in $artifacts; the last lines of $log:"
    tail -n 30 "$log"
  else
    echo "$t: ${execs:-?} executions in ${secs} s, 0 crashes (log: $log)"
  fi
}

for t in "${TARGETS[@]}"; do
  run_target "$t" "core/fuzz/corpus/$t" "${FUZZ_SMOKE_RUNS:-200000}" "$FUZZ_BUILD/core/fuzz/$t"
done

# The Python target (atheris): the system YAML loader and the analysis behind `paam analyze`,
# with the venv's paam. Fewer runs: each one goes through PyYAML and the analysis.
ntargets=${#TARGETS[@]}
PY=${PY:-.venv/bin/python}
if "$PY" -c 'import atheris, paam.analysis' >/dev/null 2>&1; then
  ntargets=$((ntargets + 1))
  run_target fuzz_system_yaml python/paam/examples "${FUZZ_SMOKE_PY_RUNS:-3000}" "$PY" python/fuzz/fuzz_system_yaml.py
else
  echo "fuzz_system_yaml: skipped ($PY has no atheris or paam: make install)"
fi
echo "$name: $ntargets targets, $total executions, $crashes crashes"
[ "$crashes" -eq 0 ]
