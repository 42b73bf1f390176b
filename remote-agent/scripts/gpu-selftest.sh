#!/usr/bin/env bash
# Runs the agent's GPU self-test on a machine with a GPU (the device machine):
#   bash remote-agent/scripts/gpu-selftest.sh [OUTPUT_DIR [all|kernels|faults|spread|profile|adversarial]]
# Prints one line per run and a 'N passed, N failed' summary; writes results.json and transcripts.json.
set -uo pipefail
cd "$(dirname "$0")/.."
out="${1:-/tmp/kr-selftest}"
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader || true
nvcc --version | tail -1 || true
python3 -c 'import torch, triton; print("torch", torch.__version__, "cuda", torch.version.cuda, "triton", triton.__version__)'
PYTHONUNBUFFERED=1 python3 selftest/selftest.py "$out" "${2:-all}"
