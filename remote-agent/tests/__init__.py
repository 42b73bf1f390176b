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
