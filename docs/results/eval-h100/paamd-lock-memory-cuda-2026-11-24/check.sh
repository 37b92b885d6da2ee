#!/usr/bin/env bash
# paamd --lock-memory beside a CUDA context: does paamd start, lock and serve, how much does it
# lock, and what does a request cost with and without it. Alternates the two, ROUNDS times each,
# on one fresh paamd per run; paam_overhead_bench (noop requests, spin wait) against it.
# Run on the GPU machine after scripts/device_eval.sh's setup:  OUT=$OUT check.sh
set -u
PY=${PY:-python3}
BIN=${BIN:-$("$PY" -c 'import sys; print(sys.prefix)')/bin}
OUT=${OUT:-.}
ROUNDS=${ROUNDS:-3}
REQUESTS=${REQUESTS:-20000}
S=/tmp/paam-lockcheck.sock
faults() { sed 's/.*) //' "/proc/$1/stat" | awk '{print $8, $10}'; }   # minflt majflt
for round in $(seq "$ROUNDS"); do
  for mode in nolock lock; do
    flag=(); [ "$mode" = lock ] && flag=(--lock-memory)
    tag=$mode-$round; log=$OUT/paamd-$tag.log
    t0=$(date +%s.%N)
    "$BIN/paamd" --backend cuda --socket "$S" --poll-us always "${flag[@]}" > "$log" 2>&1 &
    pid=$!
    for _ in $(seq 300); do grep -q "serving on" "$log" && break; kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
    t1=$(date +%s.%N)
    { echo "run $tag: ready after $(awk "BEGIN{printf \"%.2f\", $t1 - $t0}") s"
      grep -E "^(VmSize|VmLck|VmRSS)" "/proc/$pid/status" | tr -s ' \t' ' '
      echo "faults before (minor major): $(faults $pid)"; } > "$OUT/status-$tag.txt"
    "$BIN/paam_overhead_bench" --socket "$S" --wait spin --payload 4096 \
      --requests "$REQUESTS" > "$OUT/bench-$tag.json" 2> "$OUT/bench-$tag.err"
    { echo "faults after (minor major): $(faults $pid)"
      grep -E "^(VmLck|VmRSS)" "/proc/$pid/status" | tr -s ' \t' ' '; } >> "$OUT/status-$tag.txt"
    kill "$pid"; wait "$pid" 2>/dev/null
    cat "$OUT/status-$tag.txt"; grep -E '"round_trip"' "$OUT/bench-$tag.json"
    grep -i -E "lock|mlock" "$log" | head -3
  done
done
