#!/usr/bin/env bash
# Copies the header-only libraries the C++ programs build with, CLI11 (CLI/) and nlohmann-json
# (nlohmann/), from this machine's include folder into build/third_party/include, for a machine
# without their packages (the lent GPU machines have no network): carry build/third_party with
# the call there. core/cmake/third_party.cmake looks there when the packages are not installed
# (and scripts/device_check.sh names the folder).
#
#   scripts/vendor_headers.sh [FROM (default /usr/include)]
set -euo pipefail
cd "$(dirname "$0")/.."
FROM=${1:-/usr/include}
TO=build/third_party/include
for lib in CLI nlohmann; do
  [ -d "$FROM/$lib" ] || {
    echo "vendor_headers: no $FROM/$lib (install libcli11-dev and nlohmann-json3-dev)" >&2
    exit 1; }
done
rm -rf "$TO"
mkdir -p "$TO"
cp -r "$FROM/CLI" "$FROM/nlohmann" "$TO/"
echo "vendor_headers: $(du -sh "$TO" | cut -f1) in $TO (CLI11 and nlohmann-json); carry build/third_party"
