"""Probe (device machine): what a process started ahead of its job spends before it is ready, alone and beside
others: PyTorch's import and the device's context, in N processes started at once (a warm worker's agents each start
five: the solution's process and two judge pairs).

    python3 selftest/probes/import_probe.py OUT_DIR

Writes OUT_DIR/import-probe.json: per N, each process's import and context seconds; and the modules whose import
took longest (``python3 -X importtime``)."""
import json
import os
import statistics
import subprocess
import sys
import time

CHILD = r"""
import json, sys, time
began = time.monotonic()
import torch
imported = time.monotonic()
if "%s" == "context":
    torch.zeros(1, device="cuda").add_(1)
    torch.cuda.synchronize()
print(json.dumps({"import": imported - began, "context": time.monotonic() - imported}))
"""


def wave(count, what):
    began = time.monotonic()
    children = [subprocess.Popen([sys.executable, "-c", CHILD % what], stdout=subprocess.PIPE, text=True)
                for _ in range(count)]
    rows = [json.loads(c.communicate()[0]) for c in children]
    wall = time.monotonic() - began
    imports = [r["import"] for r in rows]
    contexts = [r["context"] for r in rows]
    return {"processes": count, "what": what, "wall_s": round(wall, 2),
            "import_p50_s": round(statistics.median(imports), 2), "import_max_s": round(max(imports), 2),
            "context_p50_s": round(statistics.median(contexts), 2), "context_max_s": round(max(contexts), 2)}


def import_times(top=25):
    err = subprocess.run([sys.executable, "-X", "importtime", "-c", "import torch"], capture_output=True,
                         text=True).stderr
    rows = []
    for line in err.splitlines():
        if not line.startswith("import time:") or "|" not in line:
            continue
        parts = [p.strip() for p in line[len("import time:"):].split("|")]
        if parts[0].isdigit():
            rows.append((int(parts[1]), int(parts[0]), parts[2]))
    rows.sort(reverse=True)
    return [{"cumulative_ms": c / 1000, "self_ms": s / 1000, "module": m} for c, s, m in rows[:top]]


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "/tmp/import-probe"
    os.makedirs(out, exist_ok=True)
    result = {"cpus": os.cpu_count(), "waves": []}
    wave(1, "import")  # the page cache warm
    for count in (1, 5, 10, 15):
        for what in ("import", "context"):
            result["waves"].append(wave(count, what))
            print(json.dumps(result["waves"][-1]), flush=True)
    result["importtime"] = import_times()
    for row in result["importtime"][:12]:
        print(json.dumps(row), flush=True)
    with open(os.path.join(out, "import-probe.json"), "w") as f:
        json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
