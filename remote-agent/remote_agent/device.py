"""What the GPU is and how it is doing: name, memory, driver, SM clock, temperature, power."""
import ctypes
import json
import os
import shutil
import subprocess
import threading

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


class Nvml:
    """The NVIDIA driver's management library (NVML, nvml.h), the one nvidia-smi reads: each reading takes
    microseconds where starting nvidia-smi took 0.1 s on the H100, on the path to every result. Every reading is
    None where NVML or the reading is absent. Line numbers: nvml.h as NVIDIA/go-nvml carries it (pkg/nvml/nvml.h,
    commit 2f9e261): every call returns NVML_SUCCESS = 0 (line 1305) or an error; nvmlInit_v2 (4023),
    nvmlDeviceGetHandleByIndex_v2 (4662), nvmlDeviceGetName (4805, a buffer of NVML_DEVICE_NAME_V2_BUFFER_SIZE = 96,
    4126), nvmlSystemGetDriverVersion (4215, NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE = 80, 4111),
    nvmlDeviceGetClockInfo / GetMaxClockInfo (5650, 5674), nvmlDeviceGetTemperature (5979; deprecated from 13.0,
    still answered by driver 580 on the H100), nvmlDeviceGetPowerUsage (6579, milliwatts), nvmlDeviceGetMemoryInfo
    (6729)."""
    SM = 1  # nvmlClockType_t NVML_CLOCK_SM (nvml.h line 1119)
    GPU_TEMPERATURE = 0  # nvmlTemperatureSensors_t NVML_TEMPERATURE_GPU (line 971)
    TEXT_BUFFER = 96  # the larger of the name's and the driver version's buffer sizes

    class _Memory(ctypes.Structure):  # nvmlMemory_t (line 261): bytes
        _fields_ = [("total", ctypes.c_ulonglong), ("free", ctypes.c_ulonglong), ("used", ctypes.c_ulonglong)]

    def __init__(self, index=None):
        self.lib = self.handle = None
        try:
            lib = ctypes.CDLL("libnvidia-ml.so.1")
            if lib.nvmlInit_v2() == 0:
                handle = ctypes.c_void_p()
                index = physical_index() if index is None else index
                if lib.nvmlDeviceGetHandleByIndex_v2(index, ctypes.byref(handle)) == 0:
                    self.lib, self.handle = lib, handle
        except (OSError, AttributeError):
            pass

    def _uint(self, fn, *args):
        if self.lib is None:
            return None
        value = ctypes.c_uint()
        return value.value if getattr(self.lib, fn)(self.handle, *args, ctypes.byref(value)) == 0 else None

    def _text(self, fn, *args):
        buffer = ctypes.create_string_buffer(self.TEXT_BUFFER)
        if getattr(self.lib, fn)(*args, buffer, ctypes.c_uint(len(buffer))) != 0:
            return None
        return buffer.value.decode(errors="replace")

    def sm_clock(self):
        return self._uint("nvmlDeviceGetClockInfo", self.SM)

    def max_sm_clock(self):
        return self._uint("nvmlDeviceGetMaxClockInfo", self.SM)

    def temperature(self):
        return self._uint("nvmlDeviceGetTemperature", self.GPU_TEMPERATURE)

    def snapshot(self):
        """nvidia-smi's fields (NVIDIA_KEYS) read through NVML, or None without NVML."""
        if self.lib is None:
            return None
        memory = self._Memory()
        power_mw = self._uint("nvmlDeviceGetPowerUsage")
        return {"name": self._text("nvmlDeviceGetName", self.handle),
                "memory_mib": memory.total // (1024 * 1024)
                if self.lib.nvmlDeviceGetMemoryInfo(self.handle, ctypes.byref(memory)) == 0 else None,
                "driver": self._text("nvmlSystemGetDriverVersion"),
                "sm_clock_mhz": self.sm_clock(), "max_sm_clock_mhz": self.max_sm_clock(),
                "temperature_c": self.temperature(),
                "power_w": power_mw / 1000.0 if power_mw is not None else None, "source": "nvml"}


_nvml = None
_nvml_lock = threading.Lock()


def nvml():
    """This process's NVML (made once: its start is the slow part)."""
    global _nvml
    with _nvml_lock:
        if _nvml is None:
            _nvml = Nvml()
        return _nvml


def info():
    """A snapshot of this process's GPU (physical_index), from NVML, else nvidia-smi, amd-smi or rocm-smi,
    whichever exists; {} when none answers."""
    try:
        snapshot = nvml().snapshot()
        if snapshot is not None:
            return snapshot
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
