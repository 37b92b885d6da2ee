#!/usr/bin/env bash
# Builds ros2/picas_rcl (PiCAS's executor on rcl, case study 2's C++ hot-path executor
# paam_cs2_executor, and the executor's test) with plain CMake against the ROS 2 Jazzy prefix pip
# installed into a virtual environment, and installs paam_cs2_executor into that venv's bin; the
# test stays at BUILD_DIR/picas_executor_test (python/tests/ros/test_picas_rcl.py runs it; built
# where GoogleTest is found: the system's, or one named in $CMAKE_PREFIX_PATH). Needs
# scripts/requirements-ros.txt installed there. Usage: ros2/build_executor.sh VENV [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
source ros2/venv_cmake.sh

VENV=${1:?usage: ros2/build_executor.sh VENV [BUILD_DIR]}
BUILD=${2:-build/picas_rcl}
venv_prefix "$VENV"
[ -f "$PREFIX/share/rcl/cmake/rclConfig.cmake" ] || {
  echo "build_executor: no rcl under $PREFIX: install scripts/requirements-ros.txt first" >&2
  exit 1
}
venv_cmake build_executor ros2/picas_rcl "$BUILD"
if [ -x "$BUILD/picas_executor_test" ]; then
  echo "paam_cs2_executor installed into $PREFIX/bin; the executor's test is $BUILD/picas_executor_test"
else
  # (GoogleTest not found: a machine without libgtest-dev; CMAKE_PREFIX_PATH may name one)
  echo "paam_cs2_executor installed into $PREFIX/bin; the executor's test was not built (no GoogleTest)" >&2
fi
