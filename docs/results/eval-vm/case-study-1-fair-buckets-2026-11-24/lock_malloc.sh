#!/bin/bash
# usage: OUT=DIR lock_malloc.sh: three case study 1 PAAM-only 90 s runs with --lock-memory as it
# was then (code after c3b0b6e: also PYTHONMALLOC=malloc for the executors), --fair-buckets auto,
# RT throttling left as it is (here the default). PAAM_PYTHON, PAAM_PAAMD, PYTHONPATH as in lock_ab.sh.
for n in m1 m2 m3; do
  mkdir -p ${OUT:-.}/$n
  echo "$n $(date -u +%H:%M:%S)"
  cd /tmp && ${PAAM_PYTHON:-python3} -c "import sys; from paam.cli import main; sys.argv=['paam','eval','case-study-1','--scale','0.25','--duration','90','--calibration','0','--methods','paam','--lock-memory','--out','${OUT:-.}/$n/eval']; sys.exit(main())" > ${OUT:-.}/$n/run.log 2>&1
done
echo ALLDONE
