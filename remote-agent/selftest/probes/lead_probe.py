"""Probe (device machine): how long the GPU-side spin ahead of each timed run must be.

    python3 selftest/probes/lead_probe.py OUT_DIR

The worker queues a spin (torch.cuda._sleep) after the L2 flush so that the GPU is still busy while the host
reaches the timed call: no launch gap is timed. It spins ~200 us, and a timed run of a small kernel costs ~0.45 ms
(sample_cost_probe.py), so the spin is about a third of the benchmark's wall time. Here leaky-relu's four tests
under 0.1 ms are measured as the benchmark measures them (Runner.measure, every sample on fresh inputs and
checked) with spins of 200, 100, 50 and 25 us, in rounds that alternate the order, and the host's own time from
the spin's launch to the call's is read too. Prints the medians per spin, and each test's time."""
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from leaky_relu_runner import warm_runner, write  # noqa: E402

OUT = sys.argv[1] if len(sys.argv) > 1 else "/tmp/lead-probe"
LEADS_US = (200, 100, 50, 25)


def main():
    torch, runner = warm_runner(OUT)
    runner.check()
    per_cycle = torch.cuda.get_device_properties(0).clock_rate / 1000.0  # the SM clock's cycles per us
    cases = runner.problem.cases[:4]
    rows = {lead: {c["name"]: [] for c in cases} for lead in LEADS_US}
    walls = {lead: [] for lead in LEADS_US}
    for round_ in range(4):
        order = LEADS_US if round_ % 2 == 0 else tuple(reversed(LEADS_US))
        for lead in order:
            runner.lead_cycles = int(per_cycle * lead)
            runner._window = None  # the empty window with the same spin
            began = time.perf_counter()
            for case in cases:
                current = []

                def prepare():
                    current[:] = [runner.input_set(case)]
                    return lambda: runner.fn(*current[0].args)

                result = runner.measure(prepare, lambda: runner.verify(case, current[0]), guard=False)
                rows[lead][case["name"]].append(round(1000 * result["median"], 3))
            walls[lead].append(round(time.perf_counter() - began, 3))
    # The host's time from the spin's launch to the call's launch (what the spin must outlast).
    gaps = []
    case = cases[0]
    for _ in range(200):
        data = runner.input_set(case)
        torch.cuda.synchronize()
        runner.flush()
        t0 = time.perf_counter()
        runner.spin(runner.lead_cycles)
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        runner.fn(*data.args)
        t1 = time.perf_counter()
        end.record()
        torch.cuda.synchronize()
        gaps.append(1e6 * (t1 - t0))
    gaps.sort()
    result = {"medians_us_per_round": rows, "wall_s_per_round": walls,
              "median_of_medians_us": {lead: {name: statistics.median(v) for name, v in by.items()}
                                       for lead, by in rows.items()},
              "host_spin_to_call_us": {"p50": round(gaps[100], 1), "p99": round(gaps[198], 1),
                                       "max": round(gaps[-1], 1)}}
    write(OUT, "lead-probe.json", result)


if __name__ == "__main__":
    main()
