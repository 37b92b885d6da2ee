#!/bin/bash
# which lock makes the stalls: the executors' alone (E) or paamd's alone (S)
cd /tmp/lmab
export PAAM_PYTHON=/tmp/ci45/.venv/bin/python PYTHONPATH=/tmp/pp
for i in 1 2 3; do
  for mode in E S; do
    if [ $mode = E ]; then extra="--lock-memory"; export PAAM_PAAMD=/tmp/lmab/paamd_nolock
    else extra=""; export PAAM_PAAMD=/tmp/lmab/paamd_lock; fi
    echo "== $mode-$i $(date -u +%H:%M:%S)"
    /tmp/ci45/.venv/bin/python -m paam.cli eval case-study-1 --scale 0.25 --duration 60 \
      --calibration 0 --methods paam $extra --out /tmp/lmab/$mode-$i > /tmp/lmab/$mode-$i.log 2>&1
    grep -E "^chain1 |page faults" /tmp/lmab/$mode-$i.log
  done
done
echo "== done $(date -u +%H:%M:%S)"
