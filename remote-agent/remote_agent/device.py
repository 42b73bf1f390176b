"""What the GPU is and how it is doing: name, memory, driver, SM clock, temperature, power."""
import json
import os
import shutil
import subprocess

NVIDIA_FIELDS = ["name", "memory.total", "driver_version", "clocks.sm", "clocks.max.sm", "temperature.gpu",
                 "power.draw"]
NVIDIA_KEYS = ["name", "memory_mib", "driver", "sm_clock_mhz", "max_sm_clock_mhz", "temperature_c", "power_w"]


def _number(text):
    try:
        value = float(text)
        return int(value) if value.is_integer() else value
    except ValueError:
        return text


def parse_nvidia_smi(line):
    values = [v.strip() for v in line.split(",")]
    return {key: (value if key in ("name", "driver") else _number(value))
            for key, value in zip(NVIDIA_KEYS, values)}


def physical_index(env=None):
    """The device this process computes on, as nvidia-smi and NVML number them (they ignore
    CUDA_VISIBLE_DEVICES): its first entry when that is a plain index, as a worker of several GPUs sets it; else 0."""
    first = (os.environ if env is None else env).get("CUDA_VISIBLE_DEVICES", "0").split(",")[0].strip()
    return int(first) if first.isdigit() else 0


def info():
    """A snapshot of this process's GPU (physical_index), from nvidia-smi, amd-smi or rocm-smi, whichever exists;
    {} when none answers."""
    try:
        if shutil.which("nvidia-smi"):
            out = subprocess.run(["nvidia-smi", "-i", str(physical_index()), "--query-gpu=" + ",".join(NVIDIA_FIELDS),
                                  "--format=csv,noheader,nounits"], capture_output=True, text=True, timeout=15)
            if out.returncode == 0 and out.stdout.strip():
                return dict(parse_nvidia_smi(out.stdout.strip().splitlines()[0]), source="nvidia-smi")
        for tool, args in (("amd-smi", ["static", "--json"]), ("rocm-smi", ["--showproductname",
                                                                              "--showtemp", "--showpower",
                                                                              "--showclocks", "--json"])):
            if shutil.which(tool):
                out = subprocess.run([tool] + args, capture_output=True, text=True, timeout=15)
                if out.returncode == 0:
                    return {"source": tool, "raw": json.loads(out.stdout)}
    except (OSError, subprocess.TimeoutExpired, json.JSONDecodeError):
        pass
    return {}
