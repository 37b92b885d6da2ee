#!/bin/bash
# usage: run_traced.sh OUTDIR DURATION [extra eval args]
# Case study 1, PAAM only, under ftrace (sched_switch, sched_wakeup, hrtimer_expire_entry,
# irq_handler_entry on every CPU; needs root and tracefs). PAAM_PYTHON: the Python with paam
# (default python3); PAAM_PAAMD as paam reads it. Writes OUTDIR/{run.log,trace.txt,t0_ns,threads.txt}.
set -u
O=$1; D=$2; shift 2
mkdir -p $O
T=/sys/kernel/tracing
echo 0 > $T/tracing_on; echo > $T/trace; echo mono > $T/trace_clock
echo 150000 > $T/buffer_size_kb
echo > $T/set_event
echo 1 > $T/events/sched/sched_switch/enable
echo 1 > $T/events/sched/sched_wakeup/enable
echo 1 > $T/events/timer/hrtimer_expire_entry/enable
echo 1 > $T/events/irq/irq_handler_entry/enable
echo 1 > $T/events/workqueue/workqueue_queue_work/enable
echo 1 > $T/events/workqueue/workqueue_execute_start/enable
echo 1 > $T/tracing_on
( sleep 25; ps -eLo pid,tid,comm,cls,rtprio,ni,psr,args | grep -v "grep\|kworker" > $O/threads.txt ) &
cd /tmp && ${PAAM_PYTHON:-python3} -c "import sys; from paam.cli import main; sys.argv=['paam','eval','case-study-1','--scale','0.25','--duration','$D','--calibration','0','--methods','paam','--out','$O/eval'] + sys.argv[1:]; sys.exit(main())" "$@" > $O/run.log 2>&1
echo 0 > $T/tracing_on
cat $T/trace > $O/trace.txt
echo 1408 > $T/buffer_size_kb; echo 0 > $T/events/sched/sched_switch/enable; echo 0 > $T/events/sched/sched_wakeup/enable; echo 0 > $T/events/timer/hrtimer_expire_entry/enable; echo 0 > $T/events/irq/irq_handler_entry/enable; echo 0 > $T/events/workqueue/enable
${PAAM_PYTHON:-python3} -c "import json,sys; print(json.load(open(sys.argv[1]))['t0_ns']['PAAM'])" $O/eval/summary.json > $O/t0_ns
wc -l $O/trace.txt; tail -5 $O/run.log
