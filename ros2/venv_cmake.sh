# Sourced by ros2/build_msgs.sh and ros2/build_executor.sh: one CMake project of ros2/ built with
# plain CMake against the ROS 2 Jazzy prefix that pip installed into a virtual environment, and
# installed into that prefix. (No rosdep, colcon or ament workspace: the wheels are the prefix.)
#
#   venv_prefix VENV                          sets PREFIX, PY and the build environment
#   venv_cmake NAME SOURCE BUILD [ARG...]     configures, builds, installs; log BUILD/NAME.log
#
# The build shows its progress (make's "[ 40%] Building ..." lines); everything else goes to the
# log, whose end is shown when a step fails.

venv_prefix() {
  PREFIX=$(cd "$1" && pwd)
  PY="$PREFIX/bin/python"
  local site d libs
  site=$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  # The ROS wheels keep their shared libraries in $PREFIX/lib and site-packages/ros_*.libs.
  libs="$PREFIX/lib"
  for d in "$site"/ros_*.libs; do [ -d "$d" ] && libs="$libs:$d"; done
  export AMENT_PREFIX_PATH="$PREFIX"
  export CMAKE_PREFIX_PATH="$PREFIX${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}"  # (and the caller's, e.g. a GoogleTest)
  export LD_LIBRARY_PATH="$libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export PATH="$PREFIX/bin:$PATH"
}

venv_cmake() {
  local name=$1 source=$2 build=$3
  shift 3
  mkdir -p "$build"
  local log="$build/$name.log"
  echo "$name: configuring $source in $build (log: $log)"
  cmake -S "$source" -B "$build" -Wno-dev \
    -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_INSTALL_PREFIX="$PREFIX" \
    -DPython3_EXECUTABLE="$PY" \
    -DPython3_FIND_STRATEGY=LOCATION "$@" >"$log" 2>&1 || { cat "$log" >&2; return 1; }
  echo "$name: building with $(nproc) jobs"
  # (pipefail: the build's status, not grep's; grep finding nothing is no failure)
  ( set -o pipefail
    cmake --build "$build" -j "$(nproc)" 2>&1 | tee -a "$log" |
      { grep --line-buffered -E '^\[ *[0-9]+%\] (Building|Generating|Linking)' || true; }
  ) || { tail -50 "$log" >&2; return 1; }
  echo "$name: installing into $PREFIX"
  cmake --install "$build" >>"$log" 2>&1 || { tail -20 "$log" >&2; return 1; }
}
