#!/bin/bash
# the four: none locked (N), executors (E), paamd (S), both (B), in turn
cd /tmp/lmab
export PAAM_PYTHON=/tmp/ci45/.venv/bin/python PYTHONPATH=/tmp/pp
for i in 6 7; do
  for mode in N E S B; do
    case $mode in
      N) extra=""; export PAAM_PAAMD=/tmp/lmab/paamd_nolock ;;
      E) extra="--lock-memory"; export PAAM_PAAMD=/tmp/lmab/paamd_nolock ;;
      S) extra=""; export PAAM_PAAMD=/tmp/lmab/paamd_lock ;;
      B) extra="--lock-memory"; export PAAM_PAAMD=/tmp/lmab/paamd_lock ;;
    esac
    echo "== $mode-$i $(date -u +%H:%M:%S)"
    /tmp/ci45/.venv/bin/python -m paam.cli eval case-study-1 --scale 0.25 --duration 60 \
      --calibration 0 --methods paam $extra --out /tmp/lmab/$mode-$i > /tmp/lmab/$mode-$i.log 2>&1
    grep -E "^chain1 |page faults" /tmp/lmab/$mode-$i.log
  done
done
echo "== done $(date -u +%H:%M:%S)"
