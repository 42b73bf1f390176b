"""The agent protocol: one ``JSON_EVENT:<mac>:<json>`` line per event on stdout, flushed at once.

``<mac>`` is the hex HMAC-SHA256 of the exact ``<json>`` text under the run's event key, which the service puts
in the payload and nobody else has: user code shares the agent's output (on dstack, one terminal stream), so an
unsigned line is only ever a log line to the service. The key lives in this process's memory only: the payload
file is removed once read, the worker that runs user code never gets it, and the process is not dumpable."""
import hashlib
import hmac
import json
import math
import sys

PREFIX = "JSON_EVENT:"

TYPES = frozenset({
    "COMPILING", "COMPILE_ERROR", "CHECKING", "TEST_RESULT", "CHECKED", "WRONG_ANSWER", "BENCHMARKING",
    "BENCHMARK_RESULT", "BENCHMARKED", "PROFILING", "PROFILE_RESULT", "PROFILE_REPORT", "PROFILED",
    "RUNTIME_ERROR", "TIME_LIMIT_EXCEEDED", "ERROR",
    "VERIFIED",  # after BENCHMARKED: the profiler's verdict on its times
    "BASELINED",  # a baseline job's end: PyTorch's own times for the problem (baseline.py)
})
TERMINAL = frozenset({"COMPILE_ERROR", "WRONG_ANSWER", "BENCHMARKED", "PROFILED", "RUNTIME_ERROR",
                      "TIME_LIMIT_EXCEEDED", "ERROR", "BASELINED"})
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


def encode(event_type, fields, key):
    if event_type not in TYPES:
        raise ValueError("unknown event type " + event_type)
    body = dict(finite(fields))
    body["type"] = event_type
    # ASCII only (JSON escapes): dstack decodes each log chunk on its own, so a character split between two
    # chunks would be lost and the MAC would not match.
    text = json.dumps(body, separators=(",", ":"), allow_nan=False, ensure_ascii=True)
    return PREFIX + sign(key, text) + ":" + text


def sign(key, text):
    return hmac.new(key, text.encode("ascii"), hashlib.sha256).hexdigest()


def decode(line, key):
    """The event of a line if it is one signed with ``key``, else None (tests and the self-test read with it)."""
    if not line.startswith(PREFIX):
        return None
    mac, _, text = line[len(PREFIX):].partition(":")
    if not text or not text.isascii() or not hmac.compare_digest(mac, sign(key, text)):
        return None
    return json.loads(text)


def trim(text, limit=MAX_DETAILS):
    """Keeps the end of long compiler or crash output, where the cause usually is."""
    text = text or ""
    if len(text) <= limit:
        return text
    return "... (" + str(len(text) - limit) + " characters cut)\n" + text[-limit:]


# Events that carry the agent's ``stamp`` (how the job was confined): its first, and every result.
STAMPED = TERMINAL | {"COMPILING", "CHECKED", "VERIFIED"}


class Emitter:
    """Writes signed events to a stream; remembers whether a terminal one was sent. ``stamp``: fields every
    STAMPED event carries (the room's isolation)."""

    def __init__(self, key, stream=None):
        self.key = key
        self.stream = stream or sys.stdout
        self.finished = None
        self.stamp = {}

    def emit(self, event_type, **fields):
        if event_type in STAMPED:
            fields = dict(self.stamp, **fields)
        self.stream.write(encode(event_type, fields, self.key) + "\n")
        self.stream.flush()
        if event_type in TERMINAL:
            self.finished = event_type
