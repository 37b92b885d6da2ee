#!/usr/bin/env bash
# Downloads ROS 2 Jazzy (scripts/requirements-ros.txt) and the paam dependencies the GPU machine's
# image lacks (scripts/requirements-device.txt) as CPython 3.12 x86-64 wheels into
# .whl/ (git-ignored), for a machine that has no network but Python 3.12 (the GPU machine),
# and packs them into .whl-xz/wheels.tar.xz: carry .whl-xz there and run
# scripts/device_eval.sh, which unpacks and installs them.
# The pack holds the wheels re-zipped without compression, then tarred and xz'd: the ROS wheels
# vendor many of the same libraries, which one xz stream stores once (40 MB of wheels -> 9 MB),
# leaving room under the 64 MiB a device call may carry. A stored zip is still a valid wheel
# (RECORD hashes the files, not their compression). Packages that machine already has (numpy,
# PyYAML, ...) are left out.
#
#   scripts/fetch_ros_wheels.sh [PYTHON_VERSION]      (default 3.12)
#   scripts/fetch_ros_wheels.sh --pack-only           (repack an existing .whl/)
set -euo pipefail
cd "$(dirname "$0")/.."
DEST=.whl
PACK=.whl-xz/wheels.tar.xz
if [ "${1:-}" != --pack-only ]; then
PYV=${1:-3.12}
mkdir -p "$DEST" build/empy-wheel
# empy 3.3.4 (the version rosidl needs) is published only as a source archive: build its
# (pure-Python) wheel here so the download below can stay binary-only.
python3 -m pip wheel -q --no-deps -w build/empy-wheel empy==3.3.4
python3 -m pip download -q --find-links build/empy-wheel --only-binary=:all: \
  --python-version "$PYV" --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 \
  --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 --platform linux_x86_64 \
  --platform any -d "$DEST" -r scripts/requirements-ros.txt -r scripts/requirements-device.txt
# Already on the GPU machine's image (see the device notes); dropping them saves ~20 MiB.
for skip in numpy packaging pyparsing python_dateutil pyyaml PyYAML setuptools tzdata six; do
  rm -f "$DEST"/${skip}-*.whl
done
echo "fetch_ros_wheels: $(ls "$DEST" | wc -l) wheels, $(du -sh "$DEST" | cut -f1) in $DEST"
fi

compgen -G "$DEST/*.whl" >/dev/null ||
  { echo "fetch_ros_wheels: no wheels in $DEST to pack: run it without --pack-only" >&2; exit 1; }
echo "fetch_ros_wheels: packing $DEST into $PACK (about a minute)"
rm -rf build/whl-stored && mkdir -p build/whl-stored "$(dirname "$PACK")"
python3 - "$DEST" build/whl-stored <<'EOF'
import pathlib, sys, zipfile
src, dst = map(pathlib.Path, sys.argv[1:])
for wheel in sorted(src.glob("*.whl")):
    with zipfile.ZipFile(wheel) as zin, zipfile.ZipFile(dst / wheel.name, "w") as zout:
        for info in zin.infolist():
            data = zin.read(info)
            info.compress_type = zipfile.ZIP_STORED
            zout.writestr(info, data)
EOF
tar -cf - -C build/whl-stored --sort=name . | xz -9 -T0 > "$PACK.tmp"
mv "$PACK.tmp" "$PACK"
rm -rf build/whl-stored
echo "fetch_ros_wheels: $(du -sh "$PACK" | cut -f1) in $PACK (carry .whl-xz to the GPU machine)"
