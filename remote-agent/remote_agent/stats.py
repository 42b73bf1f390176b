"""Runtime statistics and the stopping rule for timed runs (the seed's coefficient-of-variation rule)."""
import math
from dataclasses import dataclass


@dataclass(frozen=True)
class StoppingRule:
    """Run at least ``min_runs`` and at most ``max_runs`` times, stopping once the coefficient of variation of
    the samples is at or below ``target_cv``; a kernel whose first run takes over ``long_run_seconds`` gets a
    fixed ``long_runs`` instead."""
    min_runs: int = 5
    max_runs: int = 20
    target_cv: float = 0.02
    long_run_seconds: float = 1.0
    long_runs: int = 3

    @staticmethod
    def from_settings(settings):
        settings = settings or {}
        rule = StoppingRule(**{k: v for k, v in settings.items() if k in StoppingRule.__dataclass_fields__})
        if rule.min_runs < 1 or rule.max_runs < rule.min_runs or rule.target_cv <= 0 or rule.long_runs < 1:
            raise ValueError("invalid benchmark settings: " + repr(rule))
        return rule


def mean(samples):
    return sum(samples) / len(samples)


def median(samples):
    ordered = sorted(samples)
    n = len(ordered)
    mid = n // 2
    return ordered[mid] if n % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def cv(samples):
    """Sample standard deviation over the mean; 0 for fewer than two samples."""
    if len(samples) < 2:
        return 0.0
    m = mean(samples)
    if m == 0:
        return 0.0
    variance = sum((s - m) ** 2 for s in samples) / (len(samples) - 1)
    return math.sqrt(variance) / m


def geomean(values):
    values = [v for v in values if v and v > 0]
    if not values:
        return None
    return math.exp(sum(math.log(v) for v in values) / len(values))


def collect(sample_ms, rule):
    """Calls ``sample_ms()`` (one timed run, in milliseconds) until the rule says stop; returns the samples."""
    samples = [sample_ms()]
    if samples[0] / 1000.0 > rule.long_run_seconds:
        while len(samples) < rule.long_runs:
            samples.append(sample_ms())
        return samples
    while len(samples) < rule.max_runs:
        if len(samples) >= rule.min_runs and cv(samples) <= rule.target_cv:
            break
        samples.append(sample_ms())
    return samples


def summary(samples, throttled=0):
    return {
        "median": median(samples),
        "mean": mean(samples),
        "min": min(samples),
        "max": max(samples),
        "cv": cv(samples),
        "iterations": len(samples),
        "throttled": throttled,
        "samples": list(samples),
    }
