#!/usr/bin/env bash
# Downloads ROS 2 Jazzy (scripts/requirements-ros.txt) as CPython 3.12 x86-64 wheels into
# .whl/ (git-ignored), for a machine that has no network but Python 3.12 (the GPU machine):
# carry .whl there and run scripts/device_eval.sh, which installs them from it.
# Packages that machine already has (numpy, PyYAML, ...) are left out, to stay under the
# 64 MiB a device call may carry.
#
#   scripts/fetch_ros_wheels.sh [PYTHON_VERSION]      (default 3.12)
set -euo pipefail
cd "$(dirname "$0")/.."
PYV=${1:-3.12}
DEST=.whl
mkdir -p "$DEST" build/empy-wheel
# empy 3.3.4 (the version rosidl needs) is published only as a source archive: build its
# (pure-Python) wheel here so the download below can stay binary-only.
python3 -m pip wheel -q --no-deps -w build/empy-wheel empy==3.3.4
python3 -m pip download -q --find-links build/empy-wheel --only-binary=:all: \
  --python-version "$PYV" --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 \
  --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 --platform linux_x86_64 \
  --platform any -d "$DEST" -r scripts/requirements-ros.txt
# Already on the GPU machine's image (see the device notes); dropping them saves ~20 MiB.
for skip in numpy packaging pyparsing python_dateutil pyyaml PyYAML setuptools tzdata six; do
  rm -f "$DEST"/${skip}-*.whl
done
echo "fetch_ros_wheels: $(ls "$DEST" | wc -l) wheels, $(du -sh "$DEST" | cut -f1) in $DEST"
