"""Probe (device machine): can the judge's cross-check read Nsight Compute's figures from the profiled run itself
(--csv --page raw to its log file) instead of a second ncu process importing the report? Prints both, timed.
python3 ncu_live_csv.py OUT_DIR"""
import os
import subprocess
import sys
import time

OUT = sys.argv[1]
os.makedirs(OUT, exist_ok=True)
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
from remote_agent import profiler  # noqa: E402

ncu = profiler.find_tool("nvcc")
target = [sys.executable, "-c", "import torch\nx = torch.randn(1000, 1000, device='cuda')\n"
          "for t in (1, 2):\n    torch.cuda.nvtx.range_push('kr-test-%d' % t)\n    y = x * 2 + t\n"
          "    torch.cuda.nvtx.range_pop()\ntorch.cuda.synchronize()\n"]
base = os.path.join(OUT, "verify")
live_log = os.path.join(OUT, "live.log")
live = profiler.verify_command(ncu, target, live_log)  # the agent's command now: the CSV in the log
# The agent's command before: a report exported, then imported by a second ncu.
exported = [a for a in live if a not in ("--csv", "--page", "raw", "--print-units", "base")]
exported = [os.path.join(OUT, "export.log") if a == live_log else a for a in exported]
i = exported.index("--log-file")
exported[i:i] = ["--export", base, "--force-overwrite"]
t0 = time.monotonic()
subprocess.run(exported, check=True)
t1 = time.monotonic()
raw_cmd, _ = profiler.ncu_import_commands(ncu, base + ".ncu-rep")
imported = subprocess.run(raw_cmd, capture_output=True, text=True).stdout
t2 = time.monotonic()
t3 = time.monotonic()
subprocess.run(live, check=True)
t4 = time.monotonic()
with open(live_log) as f:
    live_text = f.read()
print("profiled run with --export %.2f s; ncu --import raw %.2f s; profiled run printing CSV %.2f s" % (
    t1 - t0, t2 - t1, t4 - t3))
with open(os.path.join(OUT, "imported.csv"), "w") as f:
    f.write(imported)
print("imported:", {k: [(x["kernel"][:30], x["duration_ms"]) for x in v]
                    for k, v in profiler.ncu_tests(imported, "").items()})
csv_start = live_text.find('"ID"')
print("live log head:", live_text[:300].replace("\n", " | "))
print("live parsed:", {k: [(x["kernel"][:30], x["duration_ms"]) for x in v]
                       for k, v in profiler.ncu_tests(live_text[csv_start:] if csv_start >= 0 else live_text,
                                                      "").items()})
