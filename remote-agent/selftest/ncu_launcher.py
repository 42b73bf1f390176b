"""Run under Nsight Compute by selftest.ncu_oracle: five calls of every case of one problem, each case's calls
between two torch.cuda._sleep marker kernels. python3 ncu_launcher.py AGENT_ROOT SLUG LIBRARY SYMBOL"""
import os
import sys

import torch

sys.path.insert(0, sys.argv[1])
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from remote_agent import catalog  # noqa: E402
import calls  # noqa: E402

problem = catalog.load(sys.argv[2])
fn = calls.entry(sys.argv[3], sys.argv[4], problem)
for case in problem.cases:
    args, keep = calls.case_args(problem, case, torch)
    torch.cuda.synchronize()
    torch.cuda._sleep(1)  # marks the start of this case's calls in the profile
    for _ in range(5):
        fn(*args)
    torch.cuda._sleep(1)
    torch.cuda.synchronize()
