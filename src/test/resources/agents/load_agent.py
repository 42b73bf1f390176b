#!/usr/bin/env python3
"""A fast agent for the load benchmark: speaks the real protocol (signed JSON_EVENT lines), no GPU.

  // load: events=<n> interval_ms=<ms>   print n events (a full successful run), each stamped with sent_ns
  // load: hang                          print COMPILING, then wait to be stopped
Every event carries "sent_ns" (time.time_ns() when printed), so a client on this machine measures the
latency from the agent's line to its own receipt.
"""
import base64
import hashlib
import hmac
import json
import os
import re
import sys
import time


KEY = b""


def emit(event_type, **fields):
    fields["type"] = event_type
    fields["sent_ns"] = time.time_ns()
    text = json.dumps(fields)
    sys.stdout.write("JSON_EVENT:" + hmac.new(KEY, text.encode(), hashlib.sha256).hexdigest() + ":" + text + "\n")
    sys.stdout.flush()


def main():
    try:
        os.setsid()  # the agent leads its own process group (see ProcessTree)
    except OSError:
        pass
    args = sys.argv[1:]
    with open(args[args.index("--payload") + 1], "rb") as f:
        payload = json.loads(f.read().decode("utf-8"))
    global KEY
    KEY = base64.b64decode(payload["event_key"])
    code = payload["code"]
    if re.search(r"//\s*load:\s*hang", code):
        emit("COMPILING")
        while True:
            time.sleep(3600)
    events = int((re.search(r"events=(\d+)", code) or [0, "50"])[1])
    interval = int((re.search(r"interval_ms=(\d+)", code) or [0, "20"])[1]) / 1000.0
    # COMPILING, CHECKING, TEST_RESULT x t, CHECKED, BENCHMARKING, BENCHMARK_RESULT x b, BENCHMARKED
    per_phase = max(0, events - 5)
    tests = per_phase // 2
    benches = per_phase - tests
    emit("COMPILING")
    time.sleep(interval)
    emit("CHECKING", total_tests=tests)
    for i in range(tests):
        time.sleep(interval)
        emit("TEST_RESULT", result={"test_id": i + 1, "name": "t%d" % (i + 1), "status": "PASSED"})
    time.sleep(interval)
    emit("CHECKED", passed_tests=tests, total_tests=tests)
    time.sleep(interval)
    emit("BENCHMARKING", total_tests=benches)
    results = []
    for i in range(benches):
        time.sleep(interval)
        result = {"test_id": i + 1, "name": "t%d" % (i + 1), "runtime_ms": 0.1, "gflops": 1.0}
        results.append(result)
        emit("BENCHMARK_RESULT", result=result)
    time.sleep(interval)
    emit("BENCHMARKED", avg_runtime_ms=0.1, avg_gflops=1.0, test_results=results)


if __name__ == "__main__":
    main()
