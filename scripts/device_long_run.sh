#!/usr/bin/env bash
# Runs longer than one device call (10 minutes) on the GPU machine: starts a sequence of
# `paam eval` runs in the background (its own process session, so it outlives the call that
# started it while the machine stays held) and lets later calls collect what has finished.
#
#   scripts/device_long_run.sh start "<label>|<experiment>|<args>" ...   # first call: setup, launch
#   scripts/device_long_run.sh poll SECONDS [LABEL]                     # later calls, back to back
#   scripts/device_long_run.sh stop                                     # end it, collect what is done
#
# Each "<label>|<experiment>|<args>" is one scripts/device_eval.sh run into $LONG/<label>, packed
# into $LONG/<label>.tgz when it ends. `poll` sleeps at most SECONDS, until the sequence is done
# (with LABEL: until that run has ended), prints the progress, and copies the finished packs,
# the logs and /proc/stat (sampled every second, gzipped) into $OUT. `stop` ends the sequence at
# once (the run going on and those not started are lost: for when the device time runs short)
# and collects as `poll` does; a later `start` may then begin another. A lent machine goes back
# 30 s after a call ends, so a poll must follow the last one at once. $LONG (default
# /tmp/paam-long) holds the run on the machine. A later call may set the length of a run not
# started yet: write seconds into $LONG/seconds, and give that run `--duration @` (default 180).
# $EVAL (default scripts/device_eval.sh) runs each step; the tests give it a stand-in.
#
#   scripts/device_long_run.sh start \
#     "paam|case-study-2|--setups 4ST --methods paam --duration 600 --gpu-ms 2.5" \
#     "ros2|case-study-2|--setups 4ST --methods ros2 --duration @ --gpu-ms 2.5"
set -euo pipefail
cd "$(dirname "$0")/.."
LONG=${LONG:-/tmp/paam-long}
OUT=${OUT:-results/device}
EVAL=${EVAL:-scripts/device_eval.sh}
cmd=${1:-}; shift || true

collect() {   # the progress, each run's last lines, and what is done into $OUT
  cat "$LONG/progress" 2>/dev/null || true
  for f in "$LONG"/run-*.log; do [ -f "$f" ] && { echo "== $f"; tail -n 4 "$f"; }; done
  mkdir -p "$OUT"
  cp "$LONG"/*.tgz "$OUT"/ 2>/dev/null || true
  tar -czf "$OUT/logs.tgz" -C "$LONG" --exclude='*.tgz' --exclude='proc-stat.txt' \
    $(cd "$LONG" && ls -d ./*.log plan progress 2>/dev/null)
  gzip -c "$LONG/proc-stat.txt" > "$OUT/proc-stat.txt.gz" 2>/dev/null || true
  ls -la "$OUT"
}

case "$cmd" in
  start)
    [ $# -ge 1 ] || { echo "device_long_run: start needs at least one 'label|experiment|args'" >&2; exit 2; }
    if [ -f "$LONG/progress" ] && ! grep -q "^all done" "$LONG/progress"; then
      echo "device_long_run: a run is already going in $LONG:" >&2; cat "$LONG/progress" >&2; exit 1
    fi
    rm -rf "$LONG" && mkdir -p "$LONG" "$OUT"
    OUT=$LONG/setup EXPERIMENTS="" "$EVAL" 2>&1 | tee "$LONG/setup.log"   # setup now, in the call
    printf '%s\n' "$@" > "$LONG/plan"
    touch "$LONG/progress"
    setsid bash -c '
      set -u; LONG=$1; cd "$2"; EVAL=$3
      echo $$ > "$LONG/runner.pid"   # the leader of the sequence'"'"'s process group (stop)
      ( while :; do echo "t $(date +%s)"; grep "^cpu" /proc/stat; sleep 1; done ) > "$LONG/proc-stat.txt" &
      sampler=$!
      while IFS="|" read -r label exp args; do
        args=" $args "
        if [[ $args == *" @ "* ]]; then
          d=$(cat "$LONG/seconds" 2>/dev/null || echo 180); args=${args/ @ / $d }
        fi
        echo "$label start $(date +%s) $exp $args" >> "$LONG/progress"
        var="ARGS_${exp//-/_}"
        env OUT="$LONG/$label" EXPERIMENTS="$exp" "$var=$args" TARBALL="$LONG/$label.tgz" \
          "$EVAL" > "$LONG/run-$label.log" 2>&1
        rc=$?; echo "$label end $(date +%s) rc=$rc" >> "$LONG/progress"
      done < "$LONG/plan"
      kill $sampler; echo "all done $(date +%s)" >> "$LONG/progress"
    ' _ "$LONG" "$PWD" "$EVAL" < /dev/null > "$LONG/runner.log" 2>&1 &
    sleep 2; echo "device_long_run: started"; cat "$LONG/progress" 2>/dev/null || true
    ;;
  poll)
    secs=${1:-0}; label=${2:-}
    [ -f "$LONG/plan" ] || { echo "device_long_run: nothing started in $LONG" >&2; exit 1; }
    if [ -n "$label" ] && ! cut -d'|' -f1 "$LONG/plan" | grep -qxF "$label"; then
      echo "device_long_run: no run labelled '$label' in $LONG/plan" >&2; exit 2
    fi
    end=$(( $(date +%s) + secs ))
    while [ "$(date +%s)" -lt "$end" ] && ! grep -q "^all done" "$LONG/progress" 2>/dev/null; do
      [ -n "$label" ] && awk -v l="$label" '$1 == l && $2 == "end" {f = 1} END {exit !f}' \
        "$LONG/progress" 2>/dev/null && break
      sleep 5
    done
    collect
    ;;
  stop)
    [ -f "$LONG/plan" ] || { echo "device_long_run: nothing started in $LONG" >&2; exit 1; }
    if ! grep -q "^all done" "$LONG/progress" 2>/dev/null; then
      pgid=$(cat "$LONG/runner.pid" 2>/dev/null || true)
      if [ -n "$pgid" ] && kill -TERM -- "-$pgid" 2>/dev/null; then
        sleep 2; kill -KILL -- "-$pgid" 2>/dev/null || true
      fi
      echo "all done $(date +%s) stopped" >> "$LONG/progress"
    fi
    collect
    ;;
  *)
    echo "usage: $0 start 'label|experiment|args' ... | poll SECONDS [LABEL] | stop" >&2; exit 2 ;;
esac
