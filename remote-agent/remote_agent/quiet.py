"""Whether the GPU was quiet while a replay was timed: its empty event windows against the ones this GPU usually
reads.

Every figure is its events' time less an empty event window (worker.Timer.measure, stats.empty_window). Another
context busy on the device (another tenant's process, a program of the machine's owner, anything the turn and the end
of strays cannot reach) lengthens those windows more than the samples: on the H100 they read 2.0-2.5 us beside one
against 1.22-1.31 us alone, and an honest 2.3 us kernel came out at 1.1-1.7 us (docs/evidence/replay-h100/run44-*,
neighbour-hog.cu with the turn taken out). So a replay whose windows read long is not ranked.

What "usual" is: the lower quartile of the windows this GPU's trusted processes read lately, where nothing of a
submission's could run beside them: the replays that passed this check, kept by the worker's agents beside the
GPU's turn (a file only the holder of the turn writes, in a folder no job's room has), and the references', timed in
a job's turn after the last job's rooms ended (turn.settle) and before its solution's library was loaded. Work on the
device only lengthens a window, so the low end is the GPU's own; a replay's window joins only within KEEP_SHARE of
it, so that no run of jobs can raise it. Where no usual window is known, or a test came with none, the replay does
not rank either. A GPU busy from before its worker's first job on (its history and every reference read long) cannot be
told from a slow one: the worker must have its GPUs to itself (remote-agent/README.md).
"""
import json
import os
import statistics
import sys
import tempfile

from remote_agent import turn

# How much longer than the usual a window may read: one worker's jobs read 1.216-1.312 us on one H100 (x1.08 of the
# lowest); beside another context's work, x1.6-2.0. A window longer by this share takes at most 0.19 us too much off
# each sample: 8% of the smallest honest figure here (2.3 us).
LONG_SHARE = 1.15
# A replay's window joins the history only within this share of the usual: one read near the limit, taken in, would
# let the next ones read longer still.
KEEP_SHARE = 1.05
KEPT = 64  # the windows a GPU's history holds, the latest
SUFFIX = ".windows"


def window_of(figures):
    """The window a process's figures were taken less (the median over its tests), or None."""
    windows = [w for w in (f.get("empty_window_ms") for f in figures.values() if isinstance(f, dict)) if _ms(w)]
    return statistics.median(windows) if windows else None


def usual(windows):
    """The GPU's usual empty window from those read lately: their lower quartile, or None where none is known."""
    ordered = sorted(w for w in windows if _ms(w))
    return ordered[len(ordered) // 4] if ordered else None


def long_window(figures, usual_ms):
    """Why a timed run's figures may be fast, or None: a test's figures taken less a window over LONG_SHARE of the
    usual one (another context was busy on the GPU), or one that is no window at all, or no usual one to go by."""
    if not _ms(usual_ms):
        return "the GPU's usual empty event window is not known: whether it was quiet cannot be told"
    windows = [f.get("empty_window_ms") if isinstance(f, dict) else None for f in figures.values()]
    if not windows or not all(_ms(w) for w in windows):
        return "a test's figures came with no empty event window of the replay's: whether the GPU was quiet cannot " \
               "be told"
    longest = max(windows)
    if longest <= LONG_SHARE * usual_ms:
        return None
    return ("the GPU's empty event window read %.3f us against its usual %.3f us while the replay was timed: another "
            "context was busy on the device, and that takes small figures low" % (1000 * longest, 1000 * usual_ms))


def keeps(window_ms, usual_ms):
    """Whether a replay's window that passed joins the GPU's history: within KEEP_SHARE of the usual one."""
    return _ms(window_ms) and _ms(usual_ms) and window_ms <= KEEP_SHARE * usual_ms


class History:
    """The windows the replays and references of one GPU read lately, beside its turn (``turn.path()`` + SUFFIX),
    read and written only by the turn's holder."""

    def __init__(self, path):
        self.path = path

    @classmethod
    def of_turn(cls):
        """This GPU's history, or None where there is no turn (a cold agent: the reference's window alone)."""
        flag = turn.path()
        return cls(flag + SUFFIX) if flag else None

    def read(self):
        try:
            with open(self.path) as f:
                kept = json.load(f)
        except (OSError, ValueError):
            return []
        return [w for w in kept if _ms(w)] if isinstance(kept, list) else []

    def keep(self, *windows):
        """``windows`` added (the latest KEPT kept), written whole (a new file renamed over the old)."""
        kept = (self.read() + [w for w in windows if _ms(w)])[-KEPT:]
        fresh = None
        try:
            fd, fresh = tempfile.mkstemp(dir=os.path.dirname(self.path), prefix=".windows-")
            with os.fdopen(fd, "w") as f:
                json.dump(kept, f)
            os.replace(fresh, self.path)
        except (OSError, ValueError) as e:  # a history not kept only leaves the next check less to go on
            print("agent: the GPU's windows were not kept:", e, file=sys.stderr, flush=True)
            if fresh is not None and os.path.exists(fresh):
                os.unlink(fresh)


def _ms(value):
    """A window in ms, as the H100 reads them (about 0.00125): a positive finite number under 1 ms."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and 0 < value < 1.0
