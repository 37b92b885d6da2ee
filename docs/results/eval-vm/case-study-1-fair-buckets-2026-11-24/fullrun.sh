#!/bin/bash
# usage: OUT=DIR fullrun.sh NAME: the three methods of case study 1 (--fair-buckets auto, the
# default), RT throttling left as it is (here the default).
mkdir -p ${OUT:-.}/$1
cd /tmp && ${PAAM_PYTHON:-python3} -c "import sys; from paam.cli import main; sys.argv=['paam','eval','case-study-1','--scale','0.25','--duration','120','--calibration','40','--out','${OUT:-.}/$1/eval']; sys.exit(main())" > ${OUT:-.}/$1/run.log 2>&1
echo ALLDONE
