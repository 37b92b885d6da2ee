#!/usr/bin/env bash
# What recording a trace costs each request (docs/observability.md): one paamd (CPU backend),
# `paam_overhead_bench` (noop requests, spin wait) run REPS times with tracing off and REPS
# times with `paam trace` recording beside it, alternating; prints the round trip's p50 and
# mean of every run and the median of each mode.
#
#   scripts/trace_overhead.sh [REQUESTS (200000)] [REPS (5)]
# Uses paamd, paam_overhead_bench and paam from PATH (make install puts them in .venv/bin).
set -euo pipefail
requests=${1:-200000}
reps=${2:-5}
dir=$(mktemp -d /tmp/paam-trace-overhead-XXXXXX)
trap 'kill "$paamd" 2>/dev/null; wait 2>/dev/null; rm -rf "$dir"' EXIT
sock=$dir/paamd.sock
paamd --socket "$sock" --device-cpu -2 2>"$dir/paamd.log" &
paamd=$!
for _ in $(seq 100); do [ -S "$sock" ] && break; sleep 0.1; done
[ -S "$sock" ] || { echo "trace_overhead: paamd did not start:"; cat "$dir/paamd.log"; exit 1; }
bench() { paam_overhead_bench --socket "$sock" --wait spin --payload 8 --requests "$requests" >"$dir/$1.json"; }
field() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); r=d.get('round_trip') or d['stages']['round_trip']; print(r['$2'])" "$1"; }
off=() on=()
for r in $(seq "$reps"); do
  t0=$(date +%s.%N)
  bench off
  # The trace covers the second run: started a second before it, for as long as the first run
  # took and two seconds more. (A background job of a script ignores SIGINT, so the trace is not
  # stopped with Ctrl-C's signal.)
  secs=$(python3 -c "import sys; print(round(float(sys.argv[2]) - float(sys.argv[1]) + 3, 1))" "$t0" "$(date +%s.%N)")
  paam trace --socket "$sock" --duration "$secs" -o "$dir/trace.json" >"$dir/trace.log" 2>&1 &
  tracer=$!
  sleep 1
  bench on
  wait "$tracer" || { echo "trace_overhead: paam trace failed:"; cat "$dir/trace.log"; exit 1; }
  o=$(field "$dir/off.json" p50_us) n=$(field "$dir/on.json" p50_us)
  echo "run $r: trace off p50 $o us mean $(field "$dir/off.json" mean_us) us; trace on p50 $n us mean $(field "$dir/on.json" mean_us) us ($(grep -o '[0-9]* requests recorded[^;]*' "$dir/trace.log" | head -n 1))"
  off+=("$o") on+=("$n")
done
python3 - "${off[*]}" "${on[*]}" <<'PY'
import statistics, sys
off, on = ([float(x) for x in a.split()] for a in sys.argv[1:3])
print(f"median p50 round trip: trace off {statistics.median(off):.3f} us, on {statistics.median(on):.3f} us "
      f"({statistics.median(on) - statistics.median(off):+.3f} us per request)")
PY
