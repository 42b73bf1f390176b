"""The payload file: validated into a Payload, or a list of what is wrong with it."""
import base64
import binascii
import json
from dataclasses import dataclass, field

from remote_agent.stats import StoppingRule

LANGUAGES = ("cuda", "hip")
MODES = ("check", "benchmark", "profile", "baseline")
# baseline: PyTorch's own times for the problem (baseline.py), a job the service's admin starts; it has no code.
# A speedup over the reference past this (on any test) publishes the result as needs_review.
DEFAULT_REVIEW_SPEEDUP = 10.0
DEFAULT_LIMITS = {"compile_seconds": 60, "test_seconds": 120, "benchmark_seconds": 300}


class PayloadError(ValueError):
    def __init__(self, problems):
        super().__init__("; ".join(problems))
        self.problems = problems


@dataclass
class Payload:
    submission_id: str
    problem: str
    language: str
    dtype: str
    code: str
    mode: str
    limits: dict = field(default_factory=lambda: dict(DEFAULT_LIMITS))
    benchmark: dict = field(default_factory=dict)
    # The largest profile report the run may send (a dstack run's log has a quota); None: MAX_REPORT_BYTES.
    report_limit_bytes: int = None


def take_event_key(raw_bytes):
    """(the event key's bytes or None, the payload without the key): the key never goes further than the agent."""
    try:
        data = json.loads(raw_bytes.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        return None, raw_bytes
    if not isinstance(data, dict):
        return None, raw_bytes
    text = data.pop("event_key", None)
    try:
        key = base64.b64decode(text, validate=True) if isinstance(text, str) else None
    except (binascii.Error, ValueError):
        key = None
    if key is not None and len(key) < 16:
        key = None
    return key, json.dumps(data).encode("utf-8")


CACHE_SECRET = b"CACHE-SECRET "


def with_cache_secret(secret, raw_bytes):
    """What a worker hands a warm agent on stdin: its library-cache secret on a line of its own, then the payload."""
    return CACHE_SECRET + secret.hex().encode("ascii") + b"\n" + raw_bytes


def take_cache_secret(raw_bytes):
    """(the worker's library-cache secret or None, the payload): the inverse of ``with_cache_secret``; anything
    else has none (and no library cache)."""
    if not raw_bytes.startswith(CACHE_SECRET):
        return None, raw_bytes
    line, _, rest = raw_bytes.partition(b"\n")
    try:
        return bytes.fromhex(line[len(CACHE_SECRET):].decode("ascii")), rest
    except ValueError:
        return None, rest


def parse(raw_bytes):
    try:
        data = json.loads(raw_bytes.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise PayloadError(["the payload is not UTF-8 JSON: " + str(e)])
    if not isinstance(data, dict):
        raise PayloadError(["the payload must be a JSON object"])
    problems = []

    def text(name, allowed=None, default=None):
        value = data.get(name, default)
        if not isinstance(value, str) or not value.strip():
            problems.append(name + " is required (a non-empty string)")
            return ""
        if allowed and value not in allowed:
            problems.append(name + " must be one of " + ", ".join(allowed) + ", got " + repr(value))
        return value

    submission_id = text("submission_id")
    problem = text("problem")
    mode = text("mode", MODES, default="benchmark")
    without_code = mode == "baseline"
    language = text("language", LANGUAGES, default="cuda" if without_code else None)
    dtype = text("dtype", default="float32")
    code = "" if without_code else text("code")
    limits = dict(DEFAULT_LIMITS)
    given = data.get("limits", {})
    if not isinstance(given, dict):
        problems.append("limits must be an object")
        given = {}
    for key, value in given.items():
        if key not in DEFAULT_LIMITS:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
            problems.append("limits." + key + " must be a positive number of seconds")
        else:
            limits[key] = value
    benchmark = data.get("benchmark", {})
    try:
        if not isinstance(benchmark, dict):
            raise ValueError("not an object")
        StoppingRule.from_settings(benchmark)
        review = benchmark.get("review_speedup", DEFAULT_REVIEW_SPEEDUP)
        if isinstance(review, bool) or not isinstance(review, (int, float)) or review <= 1:
            raise ValueError("review_speedup must be a number above 1")
        if not isinstance(benchmark.get("audit", False), bool):
            raise ValueError("audit must be true or false")
        below = benchmark.get("new_best_below_ms")
        if below is not None and (isinstance(below, bool) or not isinstance(below, (int, float)) or not below > 0):
            raise ValueError("new_best_below_ms must be a positive number of milliseconds or null")
    except (TypeError, ValueError) as e:
        problems.append("benchmark must be an object of min_runs, max_runs, target_cv, long_run_seconds, "
                        "long_runs, review_speedup, audit and new_best_below_ms: " + str(e))
    report_limit = data.get("report_limit_bytes")
    if report_limit is not None and (isinstance(report_limit, bool) or not isinstance(report_limit, int)
                                     or report_limit < 1):
        problems.append("report_limit_bytes must be a positive whole number of bytes")
    if problems:
        raise PayloadError(problems)
    return Payload(submission_id, problem, language, dtype, code, mode, limits, benchmark, report_limit)
