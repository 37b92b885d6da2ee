#!/usr/bin/env bash
# Request-overhead measurement on a machine without the Python package (the GPU machine):
# builds paamd + paam_overhead_bench, runs `noop` requests through a fresh paamd for every
# backend x wait mode x payload, and merges the JSON into $OUT/overhead_<backend>.json.
# Render the table locally with:  python -m paam.bench.overhead --render FILE.json
#
#   OUT=/some/dir REQUESTS=100000 BACKENDS="cpu cuda" scripts/device_overhead.sh
set -euo pipefail
OUT=${OUT:-results/overhead}
REQUESTS=${REQUESTS:-100000}
BACKENDS=${BACKENDS:-cpu}
BUILD=${BUILD:-build/device}
mkdir -p "$OUT" /tmp/paam-ovh
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$BUILD" -j "$(nproc)" --target paamd paam_overhead_bench >/dev/null
for backend in $BACKENDS; do
  files=()
  for wait in spin suspend hybrid; do
    for payload in 8 1048576; do
      sock=/tmp/paam-ovh/paamd.sock
      "$BUILD/core/paamd" --socket "$sock" --backend "$backend" --buckets 1 >/tmp/paam-ovh/paamd.log 2>&1 &
      pid=$!
      for _ in $(seq 100); do [ -S "$sock" ] && break; sleep 0.05; done
      f=/tmp/paam-ovh/$backend-$wait-$payload.json
      "$BUILD/core/paam_overhead_bench" --socket "$sock" --wait "$wait" --payload "$payload" \
        --requests "$REQUESTS" --cpu 0 >"$f"
      kill "$pid"; wait "$pid" || true
      files+=("$f")
      echo "$backend $wait $payload: $(python3 -c "import json,sys; s=json.load(open('$f'))['stages']['round_trip']; print('p50 %.2f us  p99 %.2f us  max %.1f us' % (s['p50_us'], s['p99_us'], s['max_us']))")"
    done
  done
  python3 - "$OUT/overhead_$backend.json" "$backend" "${files[@]}" <<'PY'
import datetime, json, os, platform, sys
out, backend, files = sys.argv[1], sys.argv[2], sys.argv[3:]
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), platform.machine())
meta = {"date": datetime.date.today().isoformat(), "backend": backend, "command": "scripts/device_overhead.sh",
        "machine": f"{cpu}, {os.cpu_count()} cores, Linux {platform.release()}", "poll_us": 50 if os.cpu_count() >= 4 else 0}
json.dump({"meta": meta, "results": [json.load(open(f)) for f in files]}, open(out, "w"), indent=1)
PY
done
