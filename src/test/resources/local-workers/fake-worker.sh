#!/bin/sh
# Plays a local GPU worker for LocalWorkersVerticleTest (run as "/bin/sh fake-worker.sh ARGS...", so it needs no
# execute bit). Each start is recorded, whole, in $HOME/starts/<gpu type>/<n>/ (n = 1, 2, ...): argv (one word a
# line), env (as `env` prints it), pid, uid, cwd and started (milliseconds since the epoch); "fake worker for <type>:
# start <n>" goes to its output (the service's <type>.log) before the record appears. Then, as files in its
# working directory (the test's AGENT_WORKDIR) say: exit-<gpu type> holds a code to exit with at once;
# ignore-term-<gpu type> makes it ignore TERM; else it sleeps (as the same process) until it is stopped.
type=
prev=
for word in "$@"; do
  if [ "$prev" = "--gpu-type" ]; then
    type=$word
  fi
  prev=$word
done
dir="$HOME/starts/$type"
mkdir -p "$dir" || exit 90
record="$dir/.new-$$"
mkdir "$record" || exit 91
printf '%s\n' "$@" > "$record/argv"
env > "$record/env"
echo $$ > "$record/pid"
id -u > "$record/uid"
pwd > "$record/cwd"
date +%s%3N > "$record/started"
n=$(( $(ls "$dir" | wc -l) + 1 ))
echo "fake worker for $type: start $n"
mv "$record" "$dir/$n" || exit 92
if [ -f "exit-$type" ]; then
  exit "$(cat "exit-$type")"
fi
if [ -f "ignore-term-$type" ]; then
  trap '' TERM
fi
exec sleep 300
