#!/usr/bin/env bash
# The adversarial cases lingering-contender.cu and neighbour-hog.cu through a warm worker, with and without the end
# of the job's processes before its timing (agent.Agent.end_strays, room.Room.end_strays), to show that it is what
# keeps work on the device beside the replay out of its own figures (device machine):
#   bash selftest/probes/lingering_contender_off.sh OUT_DIR
# 1. The agent as it is: both cases as cases.json requires (lingering-contender.cu no faster than 0.85 of the honest
#    leaky-relu timed first).
# 2. A copy of the agent that ends nothing before the timing (the verdict's worker, which ran the host code, idle
#    until the benchmark is over, as it was): lingering-contender.cu must come out faster than that.
set -uo pipefail
cd "$(dirname "$0")/../.."
out="${1:?an output folder}"
mkdir -p "$out"
cases=lingering-contender.cu,neighbour-hog.cu
KR_CASES=$cases PYTHONUNBUFFERED=1 python3 selftest/worker_bench.py "$out/on" 1 all > "$out/on.txt" 2>&1
source selftest/probes/off.sh
agent=$(agent_without remote_agent/agent.py \
  's/^            alone = self.end_strays()$/            alone = True  # probe: nothing ended before the timing/' \
  'probe: nothing ended' "$out/off.txt") || exit 1
KR_CASES=$cases PYTHONUNBUFFERED=1 python3 "$agent/selftest/worker_bench.py" "$out/off" 1 all >> "$out/off.txt" 2>&1
rm -rf "$(dirname "$agent")"
python3 - "$out" <<'PY'
import json, sys
for side in ("on", "off"):
    run = json.load(open("%s/%s/worker-bench.json" % (sys.argv[1], side)))
    honest = run["cases"][0]["geomean_runtime_ms"]
    for row in run["cases"][:-1]:
        figure = row.get("geomean_runtime_ms")
        print(side, row["name"], row["final"], "ranked" if row.get("ranked") else "unranked",
              "%.5f ms (x%.3f of honest)" % (figure, figure / honest) if figure and honest else figure,
              "ok" if row["ok"] else "NOT AS REQUIRED",
              [(t["name"], round(t["runtime_ms"] * 1000, 3), t["empty_window_ms"]) for t in row.get("tests") or []])
PY
