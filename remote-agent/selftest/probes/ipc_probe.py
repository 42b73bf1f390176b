"""CUDA IPC between two processes of one job's room, as the judge and its serving worker use it: the exporter (the
judge's confinement) shares a buffer from a memory pool of its own, the importer (the solution's) writes it; each
part of the room left out in turn. Then one agent run with its log written as it goes (a hang leaves its log).
Run as root on the GPU machine: ``python3 selftest/probes/ipc_probe.py OUT_DIR``"""
import base64
import json
import os
import subprocess
import sys
import time

AGENT_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, AGENT_ROOT)
from remote_agent import agent, sandbox  # noqa: E402

EXPORTER = '''
import base64, pickle, sys, torch
from torch.multiprocessing.reductions import reduce_tensor
pool = torch.cuda.MemPool()
with torch.cuda.use_mem_pool(pool):
    shared = torch.zeros(1 << 20, device="cuda")
private = torch.ones(1 << 20, device="cuda")
torch.cuda.synchronize()
print(base64.b64encode(pickle.dumps(reduce_tensor(shared))).decode(), flush=True)
sys.stdin.readline()
torch.cuda.synchronize()
print("exporter sees", float(shared.sum()), float(private.sum()), flush=True)
'''
IMPORTER = '''
import base64, ctypes, pickle, sys, torch
rebuild, args = pickle.loads(base64.b64decode(sys.stdin.readline()))
t = rebuild(*args)
t.fill_(2.0)
torch.cuda.synchronize()
cuda = ctypes.CDLL("libcuda.so.1")
base, size = ctypes.c_uint64(), ctypes.c_size_t()
r = cuda.cuMemGetAddressRange_v2(ctypes.byref(base), ctypes.byref(size), ctypes.c_uint64(t.data_ptr()))
print("importer wrote; mapped range", r, size.value, "bytes for a", t.numel() * 4, "byte buffer", flush=True)
'''


def ipc(without):
    workspace = agent.Workspace.open(without)
    try:
        env = agent.worker_command(workspace.work)[1]
        start = dict(cwd=workspace.work, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                     stderr=subprocess.PIPE, text=True, start_new_session=True)
        exporter = subprocess.Popen([sys.executable, "-c", EXPORTER], preexec_fn=workspace.room.preexec(
            "judge", workspace.work, own=[os.path.join(workspace.work, agent.JUDGE_HOME)]), **start)
        importer = subprocess.Popen([sys.executable, "-c", IMPORTER],
                                    preexec_fn=agent.solution_preexec(workspace.room, workspace.work), **start)
        try:
            handle = exporter.stdout.readline()
            importer.stdin.write(handle)
            importer.stdin.flush()
            out, err = importer.communicate(timeout=40)
            exporter.stdin.write("done\n")
            exporter.stdin.flush()
            eout, eerr = exporter.communicate(timeout=40)
            return {"without": without, "importer": out.strip(), "importer_err": err.strip()[-600:],
                    "exporter": eout.strip(), "exporter_err": eerr.strip()[-400:]}
        except subprocess.TimeoutExpired:
            return {"without": without, "timeout": True}
        finally:
            for p in (exporter, importer):
                p.kill()
    finally:
        workspace.close()


def agent_run(out_dir):
    key = os.urandom(32)
    with open(os.path.join(AGENT_ROOT, "selftest", "kernels", "leaky-relu.cu")) as f:
        code = f.read()
    payload = {"submission_id": "probe", "problem": "leaky-relu", "language": "cuda", "dtype": "float32",
               "code": code, "mode": "benchmark", "limits": {"test_seconds": 40, "benchmark_seconds": 60},
               "event_key": base64.b64encode(key).decode()}
    path = os.path.join(out_dir, "payload.json")
    with open(path, "w") as f:
        json.dump(payload, f)
    began = time.monotonic()
    with open(os.path.join(out_dir, "agent-stdout.txt"), "w") as out, \
            open(os.path.join(out_dir, "agent-stderr.txt"), "w") as err:
        agent_process = subprocess.Popen([sys.executable, "-m", "remote_agent", "--payload", path], cwd=AGENT_ROOT,
                                         stdout=out, stderr=err, env=dict(os.environ, PYTHONUNBUFFERED="1"))
        try:
            code = agent_process.wait(timeout=170)
        except subprocess.TimeoutExpired:
            subprocess.run(["ps", "-eo", "pid,ppid,user,stat,wchan:24,etime,args", "--forest"], stdout=err)
            agent_process.kill()
            code = "timeout"
    print("agent run: exit %s after %.1f s" % (code, time.monotonic() - began), flush=True)


def main():
    out_dir = sys.argv[1]
    os.makedirs(out_dir, exist_ok=True)
    sandbox.claim()
    rows = []
    for without in ((), ("seccomp",), ("landlock",), ("seccomp", "landlock")):
        rows.append(ipc(without))
        print(json.dumps(rows[-1]), flush=True)
    with open(os.path.join(out_dir, "ipc.json"), "w") as f:
        json.dump(rows, f, indent=1)
    sandbox.release()
    agent_run(out_dir)


if __name__ == "__main__":
    main()
