#!/bin/bash
# usage: ab.sh OUTDIR: four untraced 90 s runs, RT throttling off (u*) and at the default (d*)
for r in u1:-1 d1:950000 u2:-1 d2:950000; do n=${r%%:*}; v=${r#*:}; "$(dirname "$0")"/rtrun.sh "$1/$n" 90 $v 0; done
echo ALLDONE
