"""Compiler discovery, command lines and the compiled-library cache."""
import hashlib
import hmac
import os
import re
import shutil
import subprocess

INCLUDE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "include")
# The libraries a problem may let a solution link (problem.json "libraries"), and their link flags. A solution
# links nothing else: the library must resolve every symbol at link time (--no-undefined), so a call into cuBLAS
# without leave fails to build instead of finding the copy PyTorch has loaded into the same process.
LIBRARIES = {"cublas": "-lcublas", "cublaslt": "-lcublasLt", "cudnn": "-lcudnn", "curand": "-lcurand",
             "rocblas": "-lrocblas", "hipblas": "-lhipblas", "miopen": "-lMIOpen"}
# Symbols of libraries no problem allows, and the name to tell the author.
KNOWN_LIBRARIES = {"cublas": "cuBLAS", "cudnn": "cuDNN", "curand": "cuRAND", "cusparse": "cuSPARSE",
                   "cufft": "cuFFT", "cutlass": "CUTLASS", "rocblas": "rocBLAS", "hipblas": "hipBLAS",
                   "miopen": "MIOpen", "torch": "PyTorch", "py": "Python"}


class Toolchain:
    """``kind`` is 'nvcc' or 'hipcc'; ``arch`` like 'sm_90' or 'gfx942'."""

    def __init__(self, kind, path, version, arch):
        self.kind = kind
        self.path = path
        self.version = version
        self.arch = arch

    def command(self, language, source, output, libraries=()):
        """argv to build ``source`` into the shared library ``output`` (no shell, ever), linking only the
        ``libraries`` the problem allows and leaving no symbol unresolved."""
        links = [LIBRARIES[name] for name in libraries if name in LIBRARIES]
        if self.kind == "hipcc":
            return [self.path, "-O3", "-std=c++17", "-shared", "-fPIC", "--offload-arch=" + self.arch,
                    "-Wl,--no-undefined", "-o", output, source, *links]
        argv = [self.path, "-O3", "-std=c++17", "-shared", "-Xcompiler", "-fPIC", "-lineinfo",
                "-arch=" + self.arch, "-Xlinker", "--no-undefined", "-o", output]
        if language == "hip":
            # HIP source on an NVIDIA GPU: our HIP-to-CUDA header stands in for <hip/hip_runtime.h>.
            argv += ["-I", INCLUDE_DIR, "-include", os.path.join(INCLUDE_DIR, "hip_cuda.h")]
        return argv + ["-x", "cu", source, *links]


def unallowed_library(output, allowed=()):
    """The library a failed link shows the solution calling without leave (its name for the author), or None:
    the linker names each unresolved symbol ("undefined reference to `cublasCreate_v2'")."""
    for symbol in re.findall(r"undefined reference to [`'\"]?([A-Za-z_][A-Za-z0-9_]*)", output or ""):
        lowered = symbol.lower()
        for prefix, name in KNOWN_LIBRARIES.items():
            if lowered.startswith(prefix) and prefix not in allowed:
                return name, symbol
    return None


def _run(argv, timeout=30):
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
        return out.returncode, out.stdout + out.stderr
    except (OSError, subprocess.TimeoutExpired) as e:
        return -1, str(e)


def find_nvcc():
    for candidate in (shutil.which("nvcc"), "/usr/local/cuda/bin/nvcc"):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    return None


def nvidia_arch():
    code, out = _run(["nvidia-smi", "--query-gpu=compute_cap", "--format=csv,noheader"])
    if code == 0 and out.strip():
        major, _, minor = out.strip().splitlines()[0].strip().partition(".")
        return "sm_" + major + minor
    return None


def detect(language):
    """The toolchain for ``language`` on this machine, or None."""
    hipcc = shutil.which("hipcc")
    if hipcc and shutil.which("rocminfo"):
        code, out = _run(["rocminfo"])
        arch = next((w for w in out.split() if w.startswith("gfx") and w != "gfx000"), None) if code == 0 else None
        if arch:
            return Toolchain("hipcc", hipcc, _run([hipcc, "--version"])[1].strip(), arch)
    nvcc = find_nvcc()
    arch = nvidia_arch()
    if nvcc and arch:
        version = _run([nvcc, "--version"])[1].strip().splitlines()
        return Toolchain("nvcc", nvcc, version[-1] if version else "unknown", arch)
    return None


def cache_key(sources, argv_template, version):
    """A hash of the sources, the flags and the compiler version."""
    h = hashlib.sha256()
    for name, text in sorted(sources.items()):
        h.update(name.encode() + b"\0" + text.encode("utf-8") + b"\0")
    h.update("\0".join(argv_template).encode() + b"\0" + version.encode())
    return h.hexdigest()[:32]


def default_cache_dir():
    return os.environ.get("KERNEL_RUNNER_CACHE", os.path.join(os.path.expanduser("~"), ".cache",
                                                               "kernel-runner"))


class LibraryCache:
    """Compiled libraries by cache key, each sealed: an HMAC of its key and SHA-256 under a secret that only the
    worker holds (it reaches each of its agents on their stdin). Where the worker is not root, user code runs as
    the worker's user and can write anything the worker can; an entry it changed does not match its seal and is
    built again rather than loaded into another submission's process. Without a secret nothing is cached."""

    def __init__(self, directory, secret):
        self.directory = directory
        self.secret = secret

    def _seal(self, key, path):
        with open(path, "rb") as f:
            digest = hashlib.sha256(f.read()).digest()
        return hmac.new(self.secret, key.encode() + b"\0" + digest, hashlib.sha256).hexdigest()

    def get(self, key, copy):
        """The entry copied to ``copy`` (a path only we write), if its copy matches the seal; else None."""
        if self.secret is None:
            return None
        entry = os.path.join(self.directory, key, "lib.so")
        try:
            with open(entry + ".seal", encoding="ascii") as f:
                seal = f.read().strip()
            shutil.copyfile(entry, copy)
        except (OSError, UnicodeDecodeError):
            return None
        return copy if hmac.compare_digest(seal, self._seal(key, copy)) else None

    def put(self, key, built):
        """Stores the library just built at ``built`` with its seal (each written whole, then renamed)."""
        if self.secret is None:
            return
        entry = os.path.join(self.directory, key, "lib.so")
        os.makedirs(os.path.dirname(entry), exist_ok=True)
        suffix = ".tmp" + str(os.getpid())
        shutil.copyfile(built, entry + suffix)
        with open(entry + ".seal" + suffix, "w", encoding="ascii") as f:
            f.write(self._seal(key, built))
        os.replace(entry + suffix, entry)
        os.replace(entry + ".seal" + suffix, entry + ".seal")
