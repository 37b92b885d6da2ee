#!/usr/bin/env bash
# paam bench models on the GPU machine (docs/models.md, "The benchmark"): builds and installs paam
# with the CUDA backend and the model plugin against the PyTorch wheel's libtorch into python3
# (no network: --no-deps --no-index; paam's optional runtime packages are not needed here), then
# runs `paam bench models` (--quick unless ARGS says otherwise) into $OUT/models: models.json,
# models_summary.json (for docs/results/), models.md and models.png. Carry build/third_party
# (CLI11 and nlohmann-json headers: scripts/vendor_headers.sh) with the call. The install is
# skipped on a warm machine whose installed paam was built from this same tree.
#
#   OUT=/some/dir [ARGS="--quick"] [PAAM_CODE_COMMIT=<commit>] scripts/device_models_bench.sh
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
export PYTHONUNBUFFERED=1
OUT=${OUT:-results/device-models-bench}
ARGS=${ARGS:---quick}
PY=${PY:-python3}
mkdir -p "$OUT"
[ -d build/third_party/include ] && export PAAM_THIRD_PARTY_INCLUDE=$PWD/build/third_party/include
t0=$(date +%s)
"$PY" -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, torch.cuda.get_device_name(0))' ||
  { echo "device_models_bench: python3 has no torch with a GPU"; exit 1; }
"$PY" -c 'import torchvision; print("torchvision", torchvision.__version__)' 2>/dev/null ||
  echo "torchvision: not installed (the models are written in torch.nn instead)"

# The tree's fingerprint: reinstall only when the sources changed since the last install here.
stamp=/tmp/paam-models-bench.stamp
tree=$(find core python pyproject.toml CMakeLists.txt -type f \( -name '*.cc' -o -name '*.h' -o -name '*.cu' \
  -o -name '*.py' -o -name '*.cpp' -o -name 'CMakeLists.txt' -o -name '*.cmake' -o -name '*.toml' \) -print0 |
  sort -z | xargs -0 cat | md5sum | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$tree" ]; then
  echo "== installing paam (CUDA backend, model plugin) into $("$PY" -c 'import sys; print(sys.prefix)')"
  CMAKE_BUILD_PARALLEL_LEVEL=$(nproc) "$PY" -m pip install -q --no-build-isolation --no-deps --no-index \
    --force-reinstall --config-settings=build-dir=build/py-device \
    --config-settings=cmake.define.PAAM_WITH_TORCH=ON --config-settings=cmake.define.PAAM_WITH_CUDA=ON . \
    >"$OUT/install.log" 2>&1 || { grep -E "error|Error" "$OUT/install.log" | head -30; tail -20 "$OUT/install.log"; exit 1; }
  echo "$tree" >"$stamp"
  echo "== install took $(( $(date +%s) - t0 )) s"
fi
"$PY" -c 'from paam.models import find_plugin; import sys; p = find_plugin(); print("model plugin:", p); sys.exit(p is None)' ||
  { echo "device_models_bench: the model plugin was not built (see $OUT/install.log)"; exit 1; }

t1=$(date +%s)
# shellcheck disable=SC2086
"$PY" -c 'import sys; from paam.cli import main; sys.exit(main())' bench models --out "$OUT/models" $ARGS 2>&1 |
  tee "$OUT/bench.log"
rc=${PIPESTATUS[0]}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
echo "== device_models_bench rc=$rc: bench $(( $(date +%s) - t1 )) s, all $(( $(date +%s) - t0 )) s"
exit "$rc"
