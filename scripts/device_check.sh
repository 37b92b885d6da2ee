#!/usr/bin/env bash
# The test suites on the GPU machine (no network, Python 3.12, no libgtest-dev, SCHED_FIFO
# denied): sets up ROS 2 and paam (CUDA backend) through scripts/device_eval.sh, builds
# GoogleTest from the sources carried in .dev/googletest, then runs every C++ test (the CUDA
# ones one at a time, after the rest) and the GPU and ROS 2 pytest suites. Logs go to $OUT.
# Carry .whl-xz, .dev and build/third_party with the call. Make .dev here, without GoogleTest's
# own tests, samples and docs (1.6 MB; a call carries at most 64 MiB):
#   mkdir -p .dev && cp -r /usr/src/googletest .dev/ && rm -rf .dev/googletest/*/{test,samples,docs}
# and build/third_party (CLI11 and nlohmann-json headers, 1.4 MB; the machine has no packages
# of them) with scripts/vendor_headers.sh. Every C++ build here (paam, the C++ executor, the
# tests) takes them from there.
#
#   OUT=/some/dir scripts/device_check.sh
set -uo pipefail
cd "$(dirname "$0")/.."
export PYTHONUNBUFFERED=1
# The experiments annex (some ROS tests drive its harness) runs from the checkout.
export PYTHONPATH="$PWD/experiments${PYTHONPATH:+:$PYTHONPATH}"
OUT=${OUT:-results/device}
mkdir -p "$OUT"
third_party=()
if [ -d build/third_party/include ]; then
  export PAAM_THIRD_PARTY_INCLUDE=$PWD/build/third_party/include  # (pip's and ros2/'s builds)
  third_party=(-DPAAM_THIRD_PARTY_INCLUDE="$PAAM_THIRD_PARTY_INCLUDE")
fi
EXPERIMENTS="" OUT="$OUT" scripts/device_eval.sh || { echo "device_check: setup failed"; exit 1; }

t0=$(date +%s)
if [ ! -f /tmp/gtest/lib/cmake/GTest/GTestConfig.cmake ] && [ ! -f /tmp/gtest/lib64/cmake/GTest/GTestConfig.cmake ]; then
  cmake -S .dev/googletest -B build/gtest-device -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_INSTALL_PREFIX=/tmp/gtest >/dev/null &&
  cmake --build build/gtest-device -j "$(nproc)" >/dev/null &&
  cmake --install build/gtest-device >/dev/null || { echo "device_check: googletest build failed"; exit 1; }
fi
cmake -S . -B build/cpp-device -DPAAM_BUILD_TESTS=ON -DPAAM_WITH_CUDA=ON "${third_party[@]}" \
  -DCMAKE_PREFIX_PATH=/tmp/gtest -DCMAKE_BUILD_TYPE=RelWithDebInfo >"$OUT/cmake.log" 2>&1 &&
cmake --build build/cpp-device -j "$(nproc)" >>"$OUT/cmake.log" 2>&1 || { tail -30 "$OUT/cmake.log"; exit 1; }
# The C++ executor's GoogleTest program: the set-up built ros2/picas_rcl before GoogleTest was
# there; built now against the one just installed (the rest is up to date)
CMAKE_PREFIX_PATH=/tmp/gtest ros2/build_executor.sh "$(python3 -c 'import sys; print(sys.prefix)')" \
  build/picas_rcl-device >>"$OUT/cmake.log" 2>&1 || { tail -30 "$OUT/cmake.log"; exit 1; }
echo "== C++ build took $(( $(date +%s) - t0 )) s"

rc=0
ctest --test-dir build/cpp-device --output-on-failure -j 8 -E '^Cuda' >"$OUT/ctest.log" 2>&1 || rc=1
ctest --test-dir build/cpp-device --output-on-failure -R '^Cuda' >"$OUT/ctest_cuda.log" 2>&1 || rc=1
grep -E "tests passed|Failed|\*\*\*" "$OUT/ctest.log" "$OUT/ctest_cuda.log"
PAAM_REQUIRE_ROS=1 PAAM_PICAS_RCL_TEST=build/picas_rcl-device/picas_executor_test \
  python3 -m pytest python/tests/test_gpu.py python/tests/test_gpu_ipc.py python/tests/test_gpu_units.py \
  python/tests/ros -q -p no:cacheprovider >"$OUT/pytest.log" 2>&1 || rc=1
tail -15 "$OUT/pytest.log"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
echo "== device_check rc=$rc, $(( $(date +%s) - t0 )) s after setup"
exit $rc
