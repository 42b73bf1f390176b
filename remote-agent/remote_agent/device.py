"""What the GPU is and how it is doing: name, memory, driver, SM clock, temperature, power."""
import json
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


def info():
    """A snapshot of GPU 0, from nvidia-smi, amd-smi or rocm-smi, whichever exists; {} when none answers."""
    try:
        if shutil.which("nvidia-smi"):
            out = subprocess.run(["nvidia-smi", "--query-gpu=" + ",".join(NVIDIA_FIELDS),
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
