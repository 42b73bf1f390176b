"""``python3 -m remote_agent --payload FILE``"""
import argparse
import os
import sys

from remote_agent.agent import Agent
from remote_agent.events import Emitter


def own_session():
    """Leads a process group of its own, so the service can stop everything it started with one signal."""
    try:
        os.setsid()
    except OSError:
        pass  # already a session leader (started by setsid)


def main(argv=None):
    own_session()
    emitter = Emitter(sys.stdout)
    parser = argparse.ArgumentParser(prog="remote_agent")
    parser.add_argument("--payload", required=True, help="the submission's payload JSON file")
    try:
        args = parser.parse_args(argv)
    except SystemExit:
        emitter.emit("ERROR", message="usage: python3 -m remote_agent --payload FILE")
        return 2
    try:
        with open(args.payload, "rb") as f:
            raw = f.read()
    except OSError as e:
        emitter.emit("ERROR", message="cannot read the payload file", details=str(e))
        return 2
    Agent(emitter).run(raw)
    return 0


if __name__ == "__main__":
    sys.exit(main())
