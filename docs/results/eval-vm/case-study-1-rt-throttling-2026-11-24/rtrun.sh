#!/bin/bash
# usage: rtrun.sh OUTDIR DURATION RT_RUNTIME_US TRACED(0/1)
# Case study 1, PAAM only, with kernel.sched_rt_runtime_us set to RT_RUNTIME_US for the run
# (-1: no RT throttling) and restored after it; needs root. PAAM_PYTHON, PAAM_PAAMD: as in
# run_traced.sh.
O=$1; D=$2; RT=$3; TR=$4
old=$(cat /proc/sys/kernel/sched_rt_runtime_us)
echo $RT > /proc/sys/kernel/sched_rt_runtime_us
echo "sched_rt_runtime_us=$(cat /proc/sys/kernel/sched_rt_runtime_us) (was $old)" 
if [ "$TR" = 1 ]; then $(dirname "$0")/run_traced.sh $O $D; else
  mkdir -p $O; cd /tmp && ${PAAM_PYTHON:-python3} -c "import sys; from paam.cli import main; sys.argv=['paam','eval','case-study-1','--scale','0.25','--duration','$D','--calibration','0','--methods','paam','--out','$O/eval']; sys.exit(main())" > $O/run.log 2>&1
fi
echo $old > /proc/sys/kernel/sched_rt_runtime_us
echo "restored $(cat /proc/sys/kernel/sched_rt_runtime_us)"
