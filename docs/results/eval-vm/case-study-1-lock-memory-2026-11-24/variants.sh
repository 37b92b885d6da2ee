#!/bin/bash
# Case study 1 on the CPU backend, PAAM alone, 60 s, one run per LABEL:VARIANT argument, in
# order. VARIANT: N nothing locked, E the executors (--lock-memory) with paamd not, S paamd
# (its --lock-memory, through the paamd_lock wrapper) with the executors not, B both.
#   variants.sh nolock-1:N lock-1:B nolock-2:N lock-2:B              (and so on: README.txt)
# PAAMD_LM: the paamd binary the wrappers run (default /tmp/paamd_lm).
cd "$(dirname "$0")"
here=$PWD
export PAAM_PYTHON=${PAAM_PYTHON:-python3} PAAMD_LM=${PAAMD_LM:-/tmp/paamd_lm}
for run in "$@"; do
  label=${run%%:*}; variant=${run##*:}
  case $variant in
    N) extra=""; export PAAM_PAAMD=$here/paamd_nolock ;;
    E) extra="--lock-memory"; export PAAM_PAAMD=$here/paamd_nolock ;;
    S) extra=""; export PAAM_PAAMD=$here/paamd_lock ;;
    B) extra="--lock-memory"; export PAAM_PAAMD=$here/paamd_lock ;;
    *) echo "variants.sh: $run: the variant is one of N E S B" >&2; exit 2 ;;
  esac
  echo "== $label ($variant) $(date -u +%H:%M:%S)"
  $PAAM_PYTHON -m paam.cli eval case-study-1 --scale 0.25 --duration 60 --calibration 0 \
    --methods paam $extra --out "$here/$label" > "$here/$label.log" 2>&1
  grep -E "^chain1 |page faults" "$here/$label.log"
done
