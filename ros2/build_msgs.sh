#!/usr/bin/env bash
# Builds the paam_msgs interface package with plain CMake against the ROS 2 Jazzy prefix that
# pip installed into a virtual environment, and installs it into that same prefix (the venv), so
# `import paam_msgs.msg` works in it. Usage: ros2/build_msgs.sh VENV [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."

VENV=${1:?usage: ros2/build_msgs.sh VENV [BUILD_DIR]}
BUILD=${2:-build/paam_msgs}
PREFIX=$(cd "$VENV" && pwd)
PY="$PREFIX/bin/python"
SITE=$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')

[ -f "$PREFIX/share/ament_cmake/cmake/ament_cmakeConfig.cmake" ] || {
  echo "build_msgs: no ament_cmake under $PREFIX: install scripts/requirements-ros.txt first" >&2
  exit 1
}

# The ROS wheels keep their shared libraries in $PREFIX/lib and site-packages/ros_*.libs.
LIBS="$PREFIX/lib"
for d in "$SITE"/ros_*.libs; do [ -d "$d" ] && LIBS="$LIBS:$d"; done
export AMENT_PREFIX_PATH="$PREFIX"
export CMAKE_PREFIX_PATH="$PREFIX"
export LD_LIBRARY_PATH="$LIBS${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PATH="$PREFIX/bin:$PATH"

mkdir -p "$BUILD"
LOG="$BUILD/build_msgs.log"
cmake -S ros2/paam_msgs -B "$BUILD" -Wno-dev \
  -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_INSTALL_PREFIX="$PREFIX" \
  -DPython3_EXECUTABLE="$PY" \
  -DPython3_FIND_STRATEGY=LOCATION \
  -DBUILD_TESTING=OFF >"$LOG" 2>&1 || { cat "$LOG" >&2; exit 1; }
cmake --build "$BUILD" -j "$(nproc)" >>"$LOG" 2>&1 || { tail -50 "$LOG" >&2; exit 1; }
cmake --install "$BUILD" >>"$LOG" 2>&1 || { tail -20 "$LOG" >&2; exit 1; }

# Check the result from a fresh interpreter of the venv.
"$PY" -c 'from paam_msgs.srv import Register; from paam_msgs.msg import Tensor; Tensor()' \
  || { echo "build_msgs: paam_msgs installed but does not import" >&2; exit 1; }
echo "paam_msgs installed into $PREFIX"
