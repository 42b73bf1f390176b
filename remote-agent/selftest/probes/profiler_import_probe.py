"""Probe (device machine): what a process pays to make its first CUPTI session, by the way it imports the profiler.

    python3 selftest/probes/profiler_import_probe.py

Each way in a fresh interpreter (PyTorch imported and the context made first, not counted): the time to import the
profiler, to run one session around a kernel, and whether the device events came back."""
import subprocess
import sys

COUNT = """
device = [e for e in events if e.device_type.name != "CPU"]
n = len(device)
first = (device[0].name[:40], round(device[0].time_range.end - device[0].time_range.start, 2)) if device else None
"""

WAYS = {
    "torch.profiler, CUDA activity (the agent's way)": """
from torch.profiler import ProfilerActivity, profile
t1 = time.perf_counter()
with profile(activities=[ProfilerActivity.CUDA]) as prof:
    x.add_(1); torch.cuda.synchronize()
events = prof.events()
""" + COUNT,
    "torch.autograd.profiler, kineto, CUDA only": """
from torch.autograd import profiler as ap
t1 = time.perf_counter()
with ap.profile(use_device="cuda", use_kineto=True, use_cpu=False) as prof:
    x.add_(1); torch.cuda.synchronize()
events = prof.function_events
""" + COUNT,
    "torch.autograd.profiler, legacy (no kineto)": """
from torch.autograd import profiler as ap
t1 = time.perf_counter()
with ap.profile(use_device="cuda") as prof:
    x.add_(1); torch.cuda.synchronize()
events = prof.function_events
""" + COUNT,
}

for name, body in WAYS.items():
    code = ("import time, sys\nimport torch\nx = torch.zeros(1024, device='cuda'); torch.cuda.synchronize()\n"
            "t0 = time.perf_counter()\n" + body +
            "t2 = time.perf_counter()\n"
            "mods = [m for m in ('torch._dynamo', 'sympy', 'torch.distributed.fsdp') if m in sys.modules]\n"
            "print('import %.2f s, first session %.2f s, device events %d %s, loaded %s' % (t1 - t0, t2 - t1, n, first, mods))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    print("%-55s %s" % (name, (out.stdout.strip() or out.stderr.strip()[-400:])), flush=True)
