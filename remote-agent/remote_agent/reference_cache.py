"""The reference's times kept by a warm worker (per problem, dtype, benchmark settings and GPU) for a few minutes,
instead of timed again in every job.

A job's reference (PyTorch) is timed in its solution's process before the solution's library is loaded there
(worker.Timer.references); the speedups are the agent's from those figures. In a job whose code is cached that
timing is on the path to the result (0.23-0.34 s of a 1.75-2.9 s job on the H100, docs/benchmarks.md): the same
figures, taken a minute earlier on the same GPU, serve as well. An entry is sealed like the library cache's
(compiler.LibraryCache: an HMAC under the worker's secret, which reaches its agents on their stdin), so an entry
changed by anyone without the secret is timed again, never trusted; and a new worker (a new secret) times afresh.
Without a secret nothing is kept."""
import hashlib
import hmac
import json
import os
import time

MAX_AGE_SECONDS = 600.0


def cache_key(problem, dtype, settings, gpu):
    """What a reference's times depend on: the problem's cases, the dtype, the timer's settings, and the GPU (a
    worker's slots share one cache folder, a GPU each)."""
    text = json.dumps([problem.slug, problem.cases, dtype, settings, gpu], sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


class ReferenceCache:
    """{test id: the reference's median in ms} by ``cache_key``, each entry sealed and at most ``max_age`` seconds
    old."""

    def __init__(self, directory, secret, max_age=MAX_AGE_SECONDS, clock=time.time):
        self.directory = os.path.join(directory, "references")
        self.secret = secret
        self.max_age = max_age
        self.clock = clock

    def _seal(self, key, body):
        return hmac.new(self.secret, key.encode() + b"\0" + body.encode(), hashlib.sha256).hexdigest()

    def get(self, key):
        """(the times, their age in seconds) if a sealed entry younger than ``max_age`` is kept, else None."""
        if self.secret is None:
            return None
        try:
            with open(os.path.join(self.directory, key + ".json"), encoding="utf-8") as f:
                entry = json.load(f)
            body, seal = entry["body"], entry["seal"]
            if not (isinstance(body, str) and isinstance(seal, str)
                    and hmac.compare_digest(seal, self._seal(key, body))):
                return None
            kept = json.loads(body)
            age = self.clock() - float(kept["at"])
            times = {int(test_id): float(ms) for test_id, ms in kept["times"].items()}
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return None
        return (times, age) if 0 <= age <= self.max_age and times else None

    def put(self, key, times):
        """Keeps ``times`` (written whole, then renamed)."""
        if self.secret is None or not times:
            return
        body = json.dumps({"at": self.clock(), "times": {str(k): v for k, v in times.items()}}, sort_keys=True)
        os.makedirs(self.directory, exist_ok=True)
        path = os.path.join(self.directory, key + ".json")
        temporary = path + ".tmp" + str(os.getpid())
        with open(temporary, "w", encoding="utf-8") as f:
            json.dump({"body": body, "seal": self._seal(key, body)}, f)
        os.replace(temporary, path)
