#!/usr/bin/env bash
# The model plugin on the GPU machine (docs/models.md): builds the core with the CUDA backend and
# the plugin against the PyTorch wheel's libtorch (python3's torch.utils.cmake_prefix_path),
# makes an AOTInductor package of the test model (scripts/make_aoti_model.py), then runs the C++
# model tests: the CPU backend, the CUDA backend (the model on its bucket's stream, two
# priorities at once) and the .pt2 package on CUDA. Carry .dev (GoogleTest's sources) and
# build/third_party with the call, as for scripts/device_check.sh. Logs go to $OUT.
#
#   OUT=/some/dir scripts/device_models.sh
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-results/device-models}
mkdir -p "$OUT"
third_party=()
[ -d build/third_party/include ] && third_party=(-DPAAM_THIRD_PARTY_INCLUDE="$PWD/build/third_party/include")
t0=$(date +%s)
if [ ! -f /tmp/gtest/lib/cmake/GTest/GTestConfig.cmake ] && [ ! -f /tmp/gtest/lib64/cmake/GTest/GTestConfig.cmake ]; then
  cmake -S .dev/googletest -B build/gtest-device -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX=/tmp/gtest >/dev/null &&
  cmake --build build/gtest-device -j "$(nproc)" >/dev/null &&
  cmake --install build/gtest-device >/dev/null || { echo "device_models: googletest build failed"; exit 1; }
fi
torch_prefix=$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)') || { echo "device_models: no torch"; exit 1; }
python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, torch.cuda.get_device_name(0))'
cmake -S . -B build/models-device -DPAAM_BUILD_TESTS=ON -DPAAM_WITH_CUDA=ON -DPAAM_WITH_TORCH=ON "${third_party[@]}" \
  -DCMAKE_PREFIX_PATH="/tmp/gtest;$torch_prefix" -DCMAKE_BUILD_TYPE=RelWithDebInfo >"$OUT/cmake.log" 2>&1 &&
cmake --build build/models-device -j "$(nproc)" --target models_test tensors_test plugin_v2_test paamd \
  paam_torch paam_make_test_model >>"$OUT/cmake.log" 2>&1 || { grep -E "error|Error" "$OUT/cmake.log" | head -40; tail -20 "$OUT/cmake.log"; exit 1; }
grep "paam: model plugin" "$OUT/cmake.log"
echo "== build took $(( $(date +%s) - t0 )) s"

models=$(mktemp -d)
build/models-device/core/paam_make_test_model "$models/tiny.pt" &&
python3 scripts/make_aoti_model.py "$models/tiny.pt" >"$OUT/aoti.log" 2>&1 || { echo "device_models: no .pt2 (see aoti.log)"; tail -20 "$OUT/aoti.log"; }
rc=0
for t in tensors_test plugin_v2_test; do
  "build/models-device/core/src/$([ $t = tensors_test ] && echo tensors || echo kernels)/$t" >"$OUT/$t.log" 2>&1 || rc=1
  tail -1 "$OUT/$t.log"
done
aoti=()
[ -f "$models/tiny.pt2" ] && aoti=(PAAM_TEST_AOTI_DIR="$models")
env "${aoti[@]}" build/models-device/core/src/models/models_test >"$OUT/models_test.log" 2>&1 || rc=1
grep -E "^\[ +(OK|FAILED|SKIPPED) +\]|Failure|error|PASSED|skipped" "$OUT/models_test.log" | head -40
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
echo "== device_models rc=$rc, $(( $(date +%s) - t0 )) s"
exit $rc
