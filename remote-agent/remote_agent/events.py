"""The agent protocol: one ``JSON_EVENT:{...}`` line per event on stdout, flushed at once."""
import json
import math
import sys

PREFIX = "JSON_EVENT:"

TYPES = frozenset({
    "COMPILING", "COMPILE_ERROR", "CHECKING", "TEST_RESULT", "CHECKED", "WRONG_ANSWER", "BENCHMARKING",
    "BENCHMARK_RESULT", "BENCHMARKED", "RUNTIME_ERROR", "TIME_LIMIT_EXCEEDED", "ERROR",
})
TERMINAL = frozenset({"COMPILE_ERROR", "WRONG_ANSWER", "BENCHMARKED", "RUNTIME_ERROR", "TIME_LIMIT_EXCEEDED",
                      "ERROR"})
MAX_DETAILS = 8000


def finite(value):
    """JSON has no NaN or Infinity: report them as strings so the line stays valid JSON."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(v) for v in value]
    return value


def encode(event_type, fields):
    if event_type not in TYPES:
        raise ValueError("unknown event type " + event_type)
    body = dict(finite(fields))
    body["type"] = event_type
    return PREFIX + json.dumps(body, separators=(",", ":"), allow_nan=False)


def trim(text, limit=MAX_DETAILS):
    """Keeps the end of long compiler or crash output, where the cause usually is."""
    text = text or ""
    if len(text) <= limit:
        return text
    return "... (" + str(len(text) - limit) + " characters cut)\n" + text[-limit:]


class Emitter:
    """Writes events to a stream; remembers whether a terminal one was sent."""

    def __init__(self, stream=None):
        self.stream = stream or sys.stdout
        self.finished = None

    def emit(self, event_type, **fields):
        self.stream.write(encode(event_type, fields) + "\n")
        self.stream.flush()
        if event_type in TERMINAL:
            self.finished = event_type
