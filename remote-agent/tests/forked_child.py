"""A module tests/test_forked.py runs as a forked child: it reports what it was given, as JSON on stdout."""
import json
import os
import sys

MARK = None  # set in the parent before the fork: a fork sees it, a new interpreter does not


def main():
    line = sys.stdin.readline().strip()
    if line == "raise":
        raise RuntimeError("the module failed")
    fds = sorted(int(name) for name in os.listdir("/proc/self/fd"))
    passed = int(os.environ["PASSED_FD"]) if "PASSED_FD" in os.environ else None
    if passed is not None:
        os.write(passed, b"through the passed descriptor")
    from tests import forked_child  # the parent's import of this module (the one the parent marked)
    print(json.dumps({"argv": sys.argv, "line": line, "cwd": os.getcwd(), "environ": dict(os.environ),
                      "getenv": os.getenv("ONLY"), "mark": forked_child.MARK, "name": __name__,
                      "sid": os.getsid(0) == os.getpid(), "fds": fds}))
    print("to stderr", file=sys.stderr)
    return int(sys.argv[1]) if len(sys.argv) > 1 else 0


if __name__ == "__main__":
    sys.exit(main())
