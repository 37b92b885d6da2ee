#!/bin/bash
# paamd's (and the executors') page faults with and without --lock-memory, case study 1 on the
# CPU backend, PAAM alone, alternating.
cd /tmp/lmab
export PAAM_PYTHON=/tmp/ci45/.venv/bin/python PYTHONPATH=/tmp/pp PAAM_PAAMD=/tmp/paamd_lm
for i in ${RUNS:-1 2}; do
  for mode in ${ORDER:-nolock lock}; do
    extra=""; [ $mode = lock ] && extra="--lock-memory"
    echo "== $mode-$i $(date -u +%H:%M:%S)"
    /tmp/ci45/.venv/bin/python -m paam.cli eval case-study-1 --scale 0.25 --duration 60 \
      --calibration 0 --methods paam $extra --out /tmp/lmab/$mode-$i > /tmp/lmab/$mode-$i.log 2>&1
    grep -E "^chain1 |page faults" /tmp/lmab/$mode-$i.log
  done
done
echo "== done $(date -u +%H:%M:%S)"
