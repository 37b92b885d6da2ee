#!/bin/bash
# in-service A/B, RT throttling lifted: paamd at 93034e8 (o*) and at ffd1e02 (n*), alternating
# usage: OLD=paamd-at-93034e8 NEW=paamd-at-ffd1e02 OUT=DIR ab2.sh (both built -DPAAM_WITH_CUDA=OFF, Release)
D=$(dirname "$0")
for r in o1:$OLD n1:$NEW o2:$OLD n2:$NEW; do
  n=${r%%:*}; b=${r#*:}
  PAAM_PAAMD=$b $D/rtrun.sh ${OUT:-.}/$n 90 -1 0
done
echo ALLDONE
