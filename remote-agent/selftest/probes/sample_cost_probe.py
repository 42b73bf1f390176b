"""Probe (device machine): what one timed sample of the worker's benchmark costs, part by part.

    python3 selftest/probes/sample_cost_probe.py OUT_DIR

Builds selftest/kernels/leaky-relu.cu as the agent does, warms the process as a prestarted worker is warmed, and
then, with the worker's own Runner: (1) the benchmark phase as it is, three times; (2) per test, one sample's parts
(a fresh input set, the sync before timing, the timed run, the two NVML readings, the check of the output), mean
over 50 samples; (3) the device-span guard's 21 calls, one profiler session each against one session around all.
Prints a JSON summary (OUT_DIR/sample-cost.json)."""
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from leaky_relu_runner import warm_runner, write  # noqa: E402  (it puts the agent on the path)
from remote_agent import worker  # noqa: E402

OUT = sys.argv[1] if len(sys.argv) > 1 else "/tmp/sample-cost"


def parts(runner, torch, case, count=50):
    totals = {"input_set": 0.0, "sync_before": 0.0, "timed_run": 0.0, "nvml_two_readings": 0.0, "check": 0.0}
    for _ in range(count):
        t0 = time.perf_counter()
        data = runner.input_set(case)
        t1 = time.perf_counter()
        torch.cuda.synchronize()
        t2 = time.perf_counter()
        runner.time_once(lambda: runner.fn(*data.args))
        t3 = time.perf_counter()
        runner.nvml.sm_clock()
        runner.nvml.temperature()
        t4 = time.perf_counter()
        runner.verify(case, data, sample=0)
        t5 = time.perf_counter()
        for key, value in zip(totals, (t1 - t0, t2 - t1, t3 - t2, t4 - t3, t5 - t4)):
            totals[key] += value
    return {key: round(1000 * value / count, 4) for key, value in totals.items()}


def spans(runner, torch, case, calls=21):
    current = []

    def prepare():
        current[:] = [runner.input_set(case)]
        return lambda: runner.fn(*current[0].args)

    began = time.perf_counter()
    separate = runner.device_spans(prepare, calls)
    separate_s = time.perf_counter() - began
    began = time.perf_counter()
    with worker.device_activity(torch) as prof:
        for _ in range(calls):
            run = prepare()
            runner.flush()
            torch.cuda.synchronize()
            run()
            torch.cuda.synchronize()
    events = [e for e in prof.function_events if e.device_type.name != "CPU"]
    one_s = time.perf_counter() - began
    return {"separate_sessions_s": round(separate_s, 4), "separate_median_us": round(1000 * sorted(separate)[calls // 2], 3),
            "one_session_s": round(one_s, 4), "one_session_device_events": len(events)}


def main():
    torch, runner = warm_runner(OUT)
    runner.check()
    result = {"device": torch.cuda.get_device_name(0), "benchmark_s": []}
    for _ in range(3):
        began = time.perf_counter()
        runner.benchmark(runner.references())
        result["benchmark_s"].append(round(time.perf_counter() - began, 3))
    result["sample_parts_ms"] = {case["name"]: parts(runner, torch, case) for case in runner.problem.cases}
    began = time.perf_counter()
    for _ in range(200):
        runner.nvml.sm_clock()
    result["nvml_sm_clock_us"] = round(1e6 * (time.perf_counter() - began) / 200, 2)
    began = time.perf_counter()
    for _ in range(200):
        runner.nvml.temperature()
    result["nvml_temperature_us"] = round(1e6 * (time.perf_counter() - began) / 200, 2)
    result["spans"] = {case["name"]: spans(runner, torch, case) for case in runner.problem.cases[:3]}
    write(OUT, "sample-cost.json", result)


if __name__ == "__main__":
    main()
