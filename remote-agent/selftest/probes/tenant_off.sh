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
copy=$(mktemp -d)
cp -r . "$copy/remote-agent"
sed -i 's/^        why = quiet.long_window(figures, quiet.usual(seen))$/        why = None  # probe: no check/' \
  "$copy/remote-agent/remote_agent/agent.py"
grep -n 'probe: no check' "$copy/remote-agent/remote_agent/agent.py" | tee "$out/check-off.txt"
PYTHONUNBUFFERED=1 python3 "$copy/remote-agent/selftest/worker_bench.py" "$out/check-off" "$count" tenant \
  >> "$out/check-off.txt" 2>&1
rm -rf "$copy"
grep -h '^neighbours:' "$out/check-on.txt" "$out/check-off.txt"
