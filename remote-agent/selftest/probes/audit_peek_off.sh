#!/usr/bin/env bash
# The adversarial case audit-peek.cu with its defences taken away (device machine), to show that it is not vacuous:
#   bash selftest/probes/audit_peek_off.sh OUT_DIR
# 1. Job files that carry the payload's audit settings (agent.AUDIT_SETTINGS emptied in a copy of the agent, as it
#    was before d17b938): the cold case must end WRONG_ANSWER, its log saying "read the audit's settings".
# 2. The case's search run outside every room (as the job's processes would be without one) while a warm worker
#    holds the audits it starts ahead: it must find their processes and their folder. Built with KR_LOOK_ONLY, it
#    signals and writes nothing.
set -uo pipefail
cd "$(dirname "$0")/../.."
out="${1:?an output folder}"
mkdir -p "$out"
source selftest/probes/off.sh
agent=$(agent_without remote_agent/agent.py 's/^AUDIT_SETTINGS = .*/AUDIT_SETTINGS = ()  # probe: none/' \
  'probe: none' "$out/settings-off.txt") || exit 1
KR_CASES=audit-peek.cu PYTHONUNBUFFERED=1 python3 "$agent/selftest/selftest.py" "$out/settings-off" adversarial \
  >> "$out/settings-off.txt" 2>&1
python3 - "$out/settings-off" >> "$out/settings-off.txt" <<'EOF'
import json, sys
for line in open(sys.argv[1] + "/runs.jsonl"):
    run = json.loads(line)
    print(run["name"], run["last"].get("type"), (run["last"].get("message") or "")[:100])
    print("\n".join(l for l in run["log"].splitlines() if "KR-ATTACK" in l)[:2000])
EOF
rm -rf "$(dirname "$agent")"

printf '#define KR_LOOK_ONLY\n#include "%s"\nint main() { return attack(1) > 0 ? 0 : 1; }\n' \
  "$PWD/selftest/adversarial/audit-peek.cu" > "$out/look.cu"
nvcc -o "$out/look" "$out/look.cu" || exit 1
python3 selftest/worker_bench.py "$out/warm" 5 > "$out/warm.txt" 2>&1 &
bench=$!
for _ in $(seq 120); do  # until the spares' audits, started ahead, are there
  pgrep -f -- '--nvtx-include' > /dev/null && break
  sleep 0.5
done
sleep 2
(cd /tmp && "$out/look") > "$out/rooms-off.txt" 2>&1
echo "look: exit $? (0: found something)" >> "$out/rooms-off.txt"
ps -eo pid,user,args | grep -E -- '--nvtx-include|lazy' | grep -v grep | cut -c1-300 >> "$out/rooms-off.txt"
wait "$bench"
rm -f "$out/look" "$out/look.cu"
tail -n 5 "$out/settings-off.txt" "$out/rooms-off.txt"
