#!/usr/bin/env bash
# Builds ros2/picas_rcl (PiCAS's executor on rcl, case study 2's C++ hot-path executor
# paam_cs2_executor, and the executor's test) with plain CMake against the ROS 2 Jazzy prefix pip
# installed into a virtual environment, and installs paam_cs2_executor into that venv's bin; the
# test stays at BUILD_DIR/picas_executor_test (python/tests/ros/test_picas_rcl.py runs it). Needs
# scripts/requirements-ros.txt installed there. Usage: ros2/build_executor.sh VENV [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."

VENV=${1:?usage: ros2/build_executor.sh VENV [BUILD_DIR]}
BUILD=${2:-build/picas_rcl}
PREFIX=$(cd "$VENV" && pwd)
PY="$PREFIX/bin/python"

[ -f "$PREFIX/share/rcl/cmake/rclConfig.cmake" ] || {
  echo "build_executor: no rcl under $PREFIX: install scripts/requirements-ros.txt first" >&2
  exit 1
}
export AMENT_PREFIX_PATH="$PREFIX"
export CMAKE_PREFIX_PATH="$PREFIX"

mkdir -p "$BUILD"
LOG="$BUILD/build_executor.log"
cmake -S ros2/picas_rcl -B "$BUILD" -Wno-dev \
  -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_INSTALL_PREFIX="$PREFIX" \
  -DPython3_EXECUTABLE="$PY" \
  -DPython3_FIND_STRATEGY=LOCATION >"$LOG" 2>&1 || { cat "$LOG" >&2; exit 1; }
cmake --build "$BUILD" -j "$(nproc)" >>"$LOG" 2>&1 || { tail -50 "$LOG" >&2; exit 1; }
cmake --install "$BUILD" >>"$LOG" 2>&1 || { tail -20 "$LOG" >&2; exit 1; }
[ -x "$BUILD/picas_executor_test" ] || { echo "build_executor: no $BUILD/picas_executor_test" >&2; exit 1; }
echo "paam_cs2_executor installed into $PREFIX/bin; the executor's test is $BUILD/picas_executor_test"
