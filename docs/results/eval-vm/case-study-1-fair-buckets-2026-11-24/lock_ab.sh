#!/bin/bash
# usage: OUT=DIR lock_ab.sh: case study 1, PAAM only, 90 s runs alternating --lock-memory (l*)
# and not (n*), --fair-buckets auto (the default) in both, RT throttling left as it is (here the
# default). PAAM_PYTHON, PAAM_PAAMD, PYTHONPATH: the paam to run.
for r in l1:--lock-memory n1: l2:--lock-memory n2: l3:--lock-memory n3:; do
  n=${r%%:*}; f=${r#*:}
  mkdir -p ${OUT:-.}/$n
  echo "$n $f $(date -u +%H:%M:%S)"
  cd /tmp && ${PAAM_PYTHON:-python3} -c "import sys; from paam.cli import main; sys.argv=['paam','eval','case-study-1','--scale','0.25','--duration','90','--calibration','0','--methods','paam','--out','${OUT:-.}/$n/eval'] + sys.argv[1:]; sys.exit(main())" $f > ${OUT:-.}/$n/run.log 2>&1
done
echo ALLDONE
