#!/usr/bin/env bash
# The paper's experiments (paam eval) on the GPU machine: no network, Python 3.12, SCHED_FIFO denied.
# Installs ROS 2 Jazzy from the wheels packed in .whl-xz (scripts/fetch_ros_wheels.sh, run where
# there is network; carry .whl-xz with the call; an unpacked .whl/ works too), builds paam_msgs
# and paam (CUDA backend) into that Python, then runs the experiments named in $EXPERIMENTS into $OUT/eval/<experiment>/. Setup is skipped
# when a previous call on the same (still warm) machine did it.
#
#   OUT=/some/dir EXPERIMENTS="overhead wait-strategies activation case-study-1" scripts/device_eval.sh
#
# Per-experiment arguments: $ARGS_<experiment with - as _>, e.g. ARGS_case_study_1="--duration 120".
# TARBALL=<file> packs $OUT/eval into one .tgz at the end: the lent machines may leave nested
# result folders out of what comes back.
#
# The checkout travels to the GPU machine together with .whl-xz (≈ 9 MB) under a 64 MiB limit;
# raw results stay out of git (docs/results keeps one small summary per experiment).
set -euo pipefail
cd "$(dirname "$0")/.."
export PYTHONUNBUFFERED=1
OUT=${OUT:-results/device}
EXPERIMENTS=${EXPERIMENTS:-}
PY=${PY:-python3}
BACKEND=${BACKEND:-cuda}
PREFIX=$("$PY" -c 'import sys; print(sys.prefix)')
STAMP=/tmp/paam-device-setup.stamp
mkdir -p "$OUT/eval"

t0=$(date +%s)
if [ ! -f "$STAMP" ]; then
  WHEELS=.whl
  if ! compgen -G ".whl/*.whl" >/dev/null; then
    [ -f .whl-xz/wheels.tar.xz ] || {
      echo "device_eval: no .whl-xz/wheels.tar.xz: run scripts/fetch_ros_wheels.sh here and carry .whl-xz" >&2
      exit 1; }
    WHEELS=build/whl-device
    rm -rf "$WHEELS" && mkdir -p "$WHEELS" && tar -xJf .whl-xz/wheels.tar.xz -C "$WHEELS"
  fi
  echo "== setup: ROS 2 Jazzy from $WHEELS into $PREFIX"
  "$PY" -m pip install -q --no-index --find-links "$WHEELS" -r scripts/requirements-ros.txt
  echo "== setup: paam_msgs"
  ros2/build_msgs.sh "$PREFIX" build/paam_msgs-device
  echo "== setup: paam_cs2_executor (C++ executor, CUDA backend)"
  ros2/build_executor.sh "$PREFIX" build/picas_rcl-device \
    || echo "device_eval: paam_cs2_executor not built: --e0-executor cpp will say so"
  echo "== setup: paam (CUDA backend)"
  CMAKE_BUILD_PARALLEL_LEVEL=$(nproc) "$PY" -m pip install -q --no-build-isolation \
    --no-index --find-links "$WHEELS" --config-settings=build-dir=build/py-device .
  "$PY" -c 'import paam, rclpy, paam_msgs.msg; print("paam", paam.__file__)'
  touch "$STAMP"
  echo "== setup took $(( $(date +%s) - t0 )) s"
fi
# The experiments annex runs from the checkout (no wheel to build, no network needed).
export PYTHONPATH="$PWD/experiments${PYTHONPATH:+:$PYTHONPATH}"
PAAM=("$PY" -c 'import sys; from paam.cli import main; sys.exit(main())')

for exp in $EXPERIMENTS; do
  var="ARGS_${exp//-/_}"
  # shellcheck disable=SC2086
  extra=${!var:-}
  echo "== paam eval $exp --backend $BACKEND $extra  ($(date -u +%H:%M:%S))"
  t=$(date +%s)
  backend=(--backend "$BACKEND")
  [ "$exp" = activation ] && backend=()   # no accelerator in that one
  # shellcheck disable=SC2086
  "${PAAM[@]}" eval "$exp" "${backend[@]}" --out "$OUT/eval/$exp" $extra 2>&1 | tee "$OUT/eval/$exp.log" \
    || echo "device_eval: $exp failed (see $OUT/eval/$exp.log)"
  echo "== $exp took $(( $(date +%s) - t )) s"
done
if [ -n "${TARBALL:-}" ]; then
  tar -czf "$TARBALL" -C "$OUT" eval && echo "== results packed into $TARBALL"
fi
