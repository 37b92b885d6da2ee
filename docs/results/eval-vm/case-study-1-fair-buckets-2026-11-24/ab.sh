#!/bin/bash
# usage: OUT=DIR ab.sh: case study 1, PAAM only, 90 s runs alternating paamd --fair-buckets as
# the eval chooses it (auto: the two best-effort chains' buckets, 2) and paamd's default (1),
# RT throttling left as it is (here the default, 950000 of 1000000 us). PAAM_PYTHON, PAAM_PAAMD,
# PYTHONPATH: the paam to run.
for r in a1:auto o1:1 a2:auto o2:1 a3:auto o3:1; do
  n=${r%%:*}; f=${r#*:}
  mkdir -p ${OUT:-.}/$n
  echo "$n --fair-buckets $f $(date -u +%H:%M:%S)"
  cd /tmp && ${PAAM_PYTHON:-python3} -c "import sys; from paam.cli import main; sys.argv=['paam','eval','case-study-1','--scale','0.25','--duration','90','--calibration','0','--methods','paam','--fair-buckets','$f','--out','${OUT:-.}/$n/eval']; sys.exit(main())" > ${OUT:-.}/$n/run.log 2>&1
done
echo ALLDONE
