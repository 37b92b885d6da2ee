#!/bin/bash
# usage: OUTDIR=DIR fullrun.sh NAME: case study 1, the three methods, with RT throttling lifted for
# the run and restored after it (needs root). PAAM_PYTHON, PAAM_PAAMD: as in run_traced.sh.
old=$(cat /proc/sys/kernel/sched_rt_runtime_us)
echo -1 > /proc/sys/kernel/sched_rt_runtime_us
echo "sched_rt_runtime_us=$(cat /proc/sys/kernel/sched_rt_runtime_us) (was $old) $(date -u +%T)"
cd /tmp && ${PAAM_PYTHON:-python3} -c "import sys; from paam.cli import main; sys.argv=['paam','eval','case-study-1','--scale','0.25','--duration','120','--calibration','40','--out','${OUTDIR:-.}/$1']; sys.exit(main())" > ${OUTDIR:-.}/$1.log 2>&1
echo $old > /proc/sys/kernel/sched_rt_runtime_us
echo "restored $(cat /proc/sys/kernel/sched_rt_runtime_us) $(date -u +%T)"
