"""Smoke run (device machine) of the new timing on one problem (default leaky-relu): its kernel, the ncu oracle
and do_bench for it, and (with --escape) the 20x own-stream escape. python3 smoke_timing.py OUT_DIR [SLUG] [--escape]"""
import json
import os
import sys

slug = sys.argv[2] if len(sys.argv) > 2 and not sys.argv[2].startswith("--") else "leaky-relu"
escape_too = "--escape" in sys.argv
sys.argv = [sys.argv[0], sys.argv[1]]
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import selftest  # noqa: E402

code = selftest.read(os.path.join(selftest.HERE, "kernels", slug + ".cu"))
events = selftest.run_agent("ok-cuda-" + slug, slug, "cuda", code)
selftest.expect(slug + " benchmarks", events, "BENCHMARKED")
medians = {slug: {r["name"]: r["runtime_ms"] for r in events[-1]["test_results"]}}
for e in events:
    if e.get("type") == "BENCHMARK_RESULT":
        st = e["result"]["runtime_stats"]
        print("%-12s median %.5f ms  iters %d  timing %s  window %.5f  span %s  clocks %s  temps %s  discarded %d"
              % (e["result"]["name"], st["median"], st["iterations"], st["timing"], st["empty_window_ms"],
                 st["device_span_ms"], st["sm_clock_mhz"], st["temperature_c"], st["discarded_throttled"]))
if escape_too:
    print(json.dumps(selftest.stream_escape(os.path.join(selftest.HERE, "faults")), indent=1))
oracle = selftest.ncu_oracle(medians)
selftest.print_oracle(oracle)
print(json.dumps(selftest.compare_do_bench(medians), indent=1))
failed = [c for c in selftest.checks if not c["ok"]]
print(json.dumps(failed, indent=1))
print("%d passed, %d failed" % (len(selftest.checks) - len(failed), len(failed)))
