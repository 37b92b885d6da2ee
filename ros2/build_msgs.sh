#!/usr/bin/env bash
# Builds the paam_msgs interface package with plain CMake against the ROS 2 Jazzy prefix that
# pip installed into a virtual environment, and installs it into that same prefix (the venv), so
# `import paam_msgs.msg` works in it. Usage: ros2/build_msgs.sh VENV [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
source ros2/venv_cmake.sh

VENV=${1:?usage: ros2/build_msgs.sh VENV [BUILD_DIR]}
BUILD=${2:-build/paam_msgs}
venv_prefix "$VENV"
[ -f "$PREFIX/share/ament_cmake/cmake/ament_cmakeConfig.cmake" ] || {
  echo "build_msgs: no ament_cmake under $PREFIX: install scripts/requirements-ros.txt first" >&2
  exit 1
}
venv_cmake build_msgs ros2/paam_msgs "$BUILD" -DBUILD_TESTING=OFF

# Check the result from a fresh interpreter of the venv.
"$PY" -c 'from paam_msgs.srv import Register; from paam_msgs.msg import Tensor; Tensor()' \
  || { echo "build_msgs: paam_msgs installed but does not import" >&2; exit 1; }
echo "paam_msgs installed into $PREFIX"
