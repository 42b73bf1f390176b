"""The agent's tests. What they and the processes they start put in the temporary folder (tempfile's, TMPDIR's) goes
into one folder of this run's, shared as /tmp is, and removed when the run ends: a run leaves nothing in /tmp."""
import atexit
import os
import shutil
import tempfile

RUN_TEMP = tempfile.mkdtemp(prefix="kr-agent-tests-")
os.chmod(RUN_TEMP, 0o1777)
os.environ["TMPDIR"] = tempfile.tempdir = RUN_TEMP
atexit.register(shutil.rmtree, RUN_TEMP, True)

from remote_agent import sandbox  # noqa: E402 (after TMPDIR: sandbox reads the temporary folder as it is imported)

# The job users the tests claim: 256 of this run's own, apart from any agent's or worker's on this machine and from
# another test run's beside this one (a sweep ends the processes of the users its own locks leave free: two runs
# of one range, each with its own locks, ended each other's).
JOB_USERS = (sandbox.JOB_USERS[0] + 100_000 + 256 * (os.getpid() % 4096), 256)
