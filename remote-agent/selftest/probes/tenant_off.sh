#!/usr/bin/env bash
# Honest leaky-relus through one warm worker beside another tenant of its GPU (a process out of the worker's reach
# that keeps the device busy; device machine), to show that the check of the replay's empty windows against the
# GPU's usual ones (remote_agent/quiet.py) is what keeps such figures off the boards:
#   bash selftest/probes/tenant_off.sh OUT_DIR [COUNT]
# 1. The worker as it is: worker_bench.py's "tenant": COUNT honest jobs alone, then COUNT beside the tenant; each of
#    those must rank as alone or not rank.
# 2. The same from a copy of the agent whose check never finds a window long: the figures beside the tenant rank,
#    and come out fast.
set -uo pipefail
cd "$(dirname "$0")/../.."
out="${1:?an output folder}"
count="${2:-4}"
mkdir -p "$out"
PYTHONUNBUFFERED=1 python3 selftest/worker_bench.py "$out/check-on" "$count" tenant > "$out/check-on.txt" 2>&1
source selftest/probes/off.sh
agent=$(agent_without remote_agent/agent.py \
  's/^\(               "came") or \)quiet.long_window(figures, usual)$/\1None  # probe: no check/' \
  'probe: no check' "$out/check-off.txt") || exit 1
PYTHONUNBUFFERED=1 python3 "$agent/selftest/worker_bench.py" "$out/check-off" "$count" tenant \
  >> "$out/check-off.txt" 2>&1
rm -rf "$(dirname "$agent")"
grep -h '^neighbours:' "$out/check-on.txt" "$out/check-off.txt"
