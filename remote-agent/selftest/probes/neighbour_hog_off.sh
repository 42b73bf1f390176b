#!/usr/bin/env bash
# The adversarial case neighbour-hog.cu beside an honest job on one GPU, with and without the device's turn (device
# machine), to show that the turn is what keeps a rival's figures as they are:
#   bash selftest/probes/neighbour_hog_off.sh OUT_DIR [PAIRS]
# 1. The worker as it is (two jobs a GPU, each job's processes on the device in its turn alone: turn.py):
#    worker_bench.py's "neighbours", an honest leaky-relu's geometric mean beside the case against alone.
# 2. The same from a copy of the agent whose turn.take takes nothing (every job on the device whenever it likes, as
#    two jobs of one GPU would be without it): the honest figures beside the case must come out slower.
set -uo pipefail
cd "$(dirname "$0")/../.."
out="${1:?an output folder}"
pairs="${2:-5}"
mkdir -p "$out"
PYTHONUNBUFFERED=1 python3 selftest/worker_bench.py "$out/turn-on" "$pairs" neighbours > "$out/turn-on.txt" 2>&1
source selftest/probes/off.sh
agent=$(agent_without remote_agent/turn.py 's/^    if not flag or _held is not None:$/    if True:  # probe: no turn/' \
  'probe: no turn' "$out/turn-off.txt") || exit 1
PYTHONUNBUFFERED=1 python3 "$agent/selftest/worker_bench.py" "$out/turn-off" "$pairs" neighbours \
  >> "$out/turn-off.txt" 2>&1
rm -rf "$(dirname "$agent")"
grep -h '^neighbours:' "$out/turn-on.txt" "$out/turn-off.txt"
