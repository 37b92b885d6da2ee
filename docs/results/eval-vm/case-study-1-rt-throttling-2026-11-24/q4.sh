#!/bin/bash
# usage: OUT=DIR q4.sh: two PAAM-only 90 s runs of case study 1 with 4 buckets (case_study_1_4buckets.yaml),
# RT throttling left as it is (here the default). PAAM_PYTHON, PAAM_PAAMD: as in run_traced.sh.
D=$(cd "$(dirname "$0")" && pwd)
for n in q1 q2; do
  mkdir -p ${OUT:-.}/$n
  cd /tmp && ${PAAM_PYTHON:-python3} -c "import sys; from paam.cli import main; sys.argv=['paam','eval','case-study-1','--system','$D/case_study_1_4buckets.yaml','--scale','0.25','--duration','90','--calibration','0','--methods','paam','--out','${OUT:-.}/$n/eval']; sys.exit(main())" > ${OUT:-.}/$n/run.log 2>&1
done
echo ALLDONE
