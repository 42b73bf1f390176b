"""Probe (device machine): what one PyTorch-profiler session around one call costs, and which parts."""
import time
import torch
from torch.profiler import ProfilerActivity, profile

x = torch.randn(1000, 1000, device="cuda")
torch.cuda.synchronize()
for attempt in range(6):
    t0 = time.perf_counter()
    p = profile(activities=[ProfilerActivity.CUDA])
    p.__enter__()
    t1 = time.perf_counter()
    y = x * 2
    torch.cuda.synchronize()
    t2 = time.perf_counter()
    p.__exit__(None, None, None)
    t3 = time.perf_counter()
    raw = p.profiler.kineto_results.events()
    dev = [e for e in raw if e.device_type().name != "CPU"]
    t4 = time.perf_counter()
    evs = [e for e in p.events() if e.device_type.name != "CPU"]
    t5 = time.perf_counter()
    print("enter %.1f ms  call %.1f  exit %.1f  raw %.1f (%d dev: %s)  events() %.1f (%d)" % (
        (t1 - t0) * 1e3, (t2 - t1) * 1e3, (t3 - t2) * 1e3, (t4 - t3) * 1e3, len(dev),
        [(e.name()[:30], e.start_ns(), e.duration_ns()) for e in dev][:2], (t5 - t4) * 1e3, len(evs)))
# one session, many calls: is a long-lived session cheap per call?
p = profile(activities=[ProfilerActivity.CUDA])
p.__enter__()
t0 = time.perf_counter()
for _ in range(100):
    y = x * 2
torch.cuda.synchronize()
t1 = time.perf_counter()
p.__exit__(None, None, None)
t2 = time.perf_counter()
raw = [e for e in p.profiler.kineto_results.events() if e.device_type().name != "CPU"]
print("100 calls in one session: calls %.1f ms, exit %.1f ms, %d device events, raw parse %.1f ms" % (
    (t1 - t0) * 1e3, (t2 - t1) * 1e3, len(raw), (time.perf_counter() - t2) * 1e3))
