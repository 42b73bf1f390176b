"""The trusted replay: a ranked time comes from a process that never ran the submission's host code.

The solution's own process records, through the CUDA driver's callbacks (CUPTI's callback API, unprivileged), what
its host code asks of the device in one call of a test (``Recorder``): each kernel by name with its grid, block,
dynamic shared memory and parameters, each memset and device-to-device copy, in the order they were issued; every
parameter word that points into a buffer of the call (an input, an output, or an allocation of the solution's own)
is recorded as that buffer and an offset. The record is untrusted and checked as such (``parse``). A fresh process
(``Replayer``) loads only the device code of the solution's library (its ``.nv_fatbin`` section, read here, never
loaded as a library: none of its host code runs), and issues the recorded work, in order, on one stream, on the
judge's buffers of fresh secret inputs; the judge checks every output. A record that does less work than the call
did gives wrong outputs and is rejected; a call whose work cannot be replayed (host logic that depends on the data,
library kernels, pointers kept in device memory, work on other devices, host copies) is timed in its own process
instead and never ranks. NVIDIA only: ROCm is timed in its own process (unranked)."""
import ctypes
import struct
import threading
from dataclasses import dataclass, field

CUPTI_NAMES = ("libcupti.so.13", "libcupti.so.12", "libcupti.so", "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so",
               "/usr/local/cuda/lib64/libcupti.so")
DRIVER_DOMAIN = 1  # CUPTI_CB_DOMAIN_DRIVER_API (cupti_callbacks.h)
API_ENTER, API_EXIT = 0, 1  # CUpti_ApiCallbackSite
MAX_OPS = 256
MAX_PARAM_BYTES = 4096  # CUDA's limit on a kernel's parameters was 4 KiB before 12.1 (32 KiB since): ours is 4 KiB
MAX_SCRATCH_BYTES = 16 << 30
FATBIN_MAGIC = 0xBA55ED50
WORD = 8


class CallbackData(ctypes.Structure):
    """CUpti_CallbackData (cupti_callbacks.h)."""
    _fields_ = [("site", ctypes.c_int), ("function_name", ctypes.c_char_p), ("params", ctypes.c_void_p),
                ("return_value", ctypes.c_void_p), ("symbol_name", ctypes.c_char_p), ("context", ctypes.c_void_p),
                ("context_uid", ctypes.c_uint32), ("correlation_data", ctypes.c_void_p),
                ("correlation_id", ctypes.c_uint32)]


class LaunchParams(ctypes.Structure):
    """cuLaunchKernel_params and cuLaunchCooperativeKernel_params (generated_cuda_meta.h): the same head."""
    _fields_ = [("f", ctypes.c_void_p)] + [(n, ctypes.c_uint) for n in ("gx", "gy", "gz", "bx", "by", "bz",
                                                                       "shared")] + [
        ("stream", ctypes.c_void_p), ("kernel_params", ctypes.POINTER(ctypes.c_void_p)), ("extra", ctypes.c_void_p)]


class LaunchConfig(ctypes.Structure):
    """CUlaunchConfig (cuda.h)."""
    _fields_ = [(n, ctypes.c_uint) for n in ("gx", "gy", "gz", "bx", "by", "bz", "shared")] + [
        ("stream", ctypes.c_void_p), ("attrs", ctypes.c_void_p), ("num_attrs", ctypes.c_uint)]


class LaunchExParams(ctypes.Structure):
    """cuLaunchKernelEx_params (generated_cuda_meta.h)."""
    _fields_ = [("config", ctypes.POINTER(LaunchConfig)), ("f", ctypes.c_void_p),
                ("kernel_params", ctypes.POINTER(ctypes.c_void_p)), ("extra", ctypes.c_void_p)]


class AllocParams(ctypes.Structure):
    """cuMemAlloc_v2_params and cuMemAllocAsync_params: the pointer's address, then the size."""
    _fields_ = [("dptr", ctypes.POINTER(ctypes.c_uint64)), ("bytesize", ctypes.c_size_t)]


class CopyParams(ctypes.Structure):
    """cuMemcpy_params, cuMemcpyAsync_params, cuMemcpyDtoD_v2_params and their Async: destination, source, bytes."""
    _fields_ = [("dst", ctypes.c_uint64), ("src", ctypes.c_uint64), ("count", ctypes.c_size_t)]


def _memset_params(width):
    """cuMemsetD8/16/32 (_v2, Async, _ptds, _ptsz): destination, the value (of ``width`` bytes), the count."""
    value = {1: ctypes.c_ubyte, 2: ctypes.c_ushort, 4: ctypes.c_uint}[width]
    return type("MemsetParams%d" % width, (ctypes.Structure,), {
        "_fields_": [("dst", ctypes.c_uint64), ("value", value), ("count", ctypes.c_size_t)]})


MEMSET_PARAMS = {width: _memset_params(width) for width in (1, 2, 4)}
CALLBACK = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32, ctypes.c_void_p)

# What is recorded, by the driver function's name (its _v2, _ptds and _ptsz forms alike).
LAUNCHES = {"cuLaunchKernel": False, "cuLaunchCooperativeKernel": True}
COPIES = {"cuMemcpy", "cuMemcpyAsync", "cuMemcpyDtoD", "cuMemcpyDtoDAsync"}
MEMSETS = {"cuMemsetD8": 1, "cuMemsetD16": 2, "cuMemsetD32": 4, "cuMemsetD8Async": 1, "cuMemsetD16Async": 2,
           "cuMemsetD32Async": 4}
ALLOCS = {"cuMemAlloc", "cuMemAllocAsync", "cuMemAllocFromPoolAsync"}
FREES = {"cuMemFree", "cuMemFreeAsync"}
# The CUDA 3.1 entry points these names had before their _v2 (32-bit device pointers, cuda.h's "_v2" defines):
# their parameters are not the _v2 layouts read here, so a call that uses one is not replayed.
V1_ENTRY_POINTS = {"cuMemAlloc", "cuMemFree", "cuMemcpyDtoD", "cuMemcpyDtoDAsync", "cuMemsetD8", "cuMemsetD16",
                   "cuMemsetD32"}
# Device work the replay cannot issue: a call that asks for any of it is not replayed.
UNREPLAYABLE = ("cuLaunch", "cuMemcpy", "cuMemset", "cuGraphLaunch", "cuStreamWriteValue", "cuStreamBatchMemOp",
                "cuStreamWaitValue", "cuMemPrefetch", "cuMemAllocManaged", "cuMemAllocPitch", "cuMemHostRegister",
                "cuMemHostAlloc", "cuMemAllocHost", "cuGraphExec", "cuGraphicsMap", "cuSignalExternal",
                "cuWaitExternal", "cuMemMap", "cuMemUnmap")


def base_name(name):
    """cuLaunchKernel_ptsz → cuLaunchKernel, cuMemsetD8_v2_ptds → cuMemsetD8."""
    for suffix in ("_ptsz", "_ptds", "_v2", "_v3"):
        if name.endswith(suffix):
            name = name[:-len(suffix)]
    return name.rstrip("_")


# ---- the record


@dataclass
class Buffers:
    """The device ranges a call's pointers may fall in: the problem's buffers by name, then scratch allocations
    (``scratch:<n>``), each (start, bytes)."""
    ranges: dict = field(default_factory=dict)

    def find(self, address):
        """(name, offset) of the buffer ``address`` points into, else None."""
        for name, (start, size) in self.ranges.items():
            if start <= address < start + size:
                return name, address - start
        return None


def _refs(op):
    """The buffer references of a recorded op (dicts with ``buffer``), to rename."""
    if op["op"] == "launch":
        return [ptr for p in op["params"] for ptr in p["pointers"]]
    return [op[k] for k in ("dst", "src") if k in op]


SCALAR_FORMATS = {"float": "<f", "int": "<i", "size_t": "<Q"}


def scalar_bytes(kind, value):
    """A scalar argument as a kernel parameter holds it."""
    return struct.pack(SCALAR_FORMATS[kind], value)


def param_record(raw, buffers, scalars=None):
    """A kernel parameter's bytes as recorded: hex, with every aligned word that points into a buffer listed (the
    replay writes its own buffer's address there), and every aligned place that holds one of the call's random
    scalars (``scalars``: name → its bytes; the replay writes the judge's value there)."""
    pointers, found_scalars = [], []
    for at in range(0, len(raw) - WORD + 1, WORD):
        found = buffers.find(struct.unpack_from("<Q", raw, at)[0])
        if found is not None:
            pointers.append({"at": at, "buffer": found[0], "offset": found[1]})
    for name, value in (scalars or {}).items():
        for at in range(0, len(raw) - len(value) + 1, len(value)):
            if raw[at:at + len(value)] == value:
                found_scalars.append({"at": at, "name": name})
    return {"bytes": raw.hex(), "pointers": pointers, "scalars": found_scalars}


class RecordError(ValueError):
    """A record that cannot be replayed (said why)."""


def _int(value, what, low=0, high=(1 << 63)):
    if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
        raise RecordError("%s: %r is not an integer in [%d, %d]" % (what, value, low, high))
    return value


def _ref(ref, sizes, what, length=0):
    """A checked (buffer, offset): the buffer is one of ``sizes`` (name → bytes) and [offset, offset + length)
    lies inside it."""
    if not isinstance(ref, dict) or ref.get("buffer") not in sizes:
        raise RecordError("%s: no such buffer %r" % (what, ref.get("buffer") if isinstance(ref, dict) else ref))
    offset = _int(ref.get("offset"), what + " offset")
    if offset + length > sizes[ref["buffer"]]:
        raise RecordError("%s: %d bytes at %d run past '%s' (%d bytes)" % (what, length, offset, ref["buffer"],
                                                                          sizes[ref["buffer"]]))
    return {"buffer": ref["buffer"], "offset": offset}


def parse(record, sizes, scalars=None):
    """The record of one call, checked: ``_parse``, every malformed part a RecordError."""
    try:
        return _parse(record, sizes, scalars or {})
    except RecordError:
        raise
    except (ValueError, TypeError, AttributeError, KeyError) as e:
        raise RecordError("a malformed record: %s" % str(e)[:200]) from None


def _parse(record, sizes, scalars):
    """The record of one call, checked (it comes from the process that ran the submission's code): a dict with its
    ``ops`` and ``scratch`` (bytes of each allocation of the solution's); ``sizes``: the call's buffers' bytes by
    name; ``scalars``: the bytes of each random scalar by name. Returns (ops, scratch sizes); raises RecordError."""
    if not isinstance(record, dict):
        raise RecordError("not a record")
    if record.get("unreplayable"):
        raise RecordError(str(record["unreplayable"])[:300])
    scratch = record.get("scratch", [])
    if not isinstance(scratch, list) or len(scratch) > 64:
        raise RecordError("scratch: not a list of at most 64 sizes")
    scratch = [_int(s, "scratch size", 1, MAX_SCRATCH_BYTES) for s in scratch]
    if sum(scratch) > MAX_SCRATCH_BYTES:
        raise RecordError("scratch: more than %d bytes" % MAX_SCRATCH_BYTES)
    sizes = dict(sizes, **{"scratch:%d" % i: s for i, s in enumerate(scratch)})
    ops = record.get("ops")
    if not isinstance(ops, list) or not ops or len(ops) > MAX_OPS:
        raise RecordError("ops: the call issued no device work the replay knows, or more than %d" % MAX_OPS)
    checked = []
    for i, op in enumerate(ops):
        what = "op %d" % i
        kind = op.get("op") if isinstance(op, dict) else None
        if kind == "launch":
            name = op.get("kernel")
            if not isinstance(name, str) or not 0 < len(name) <= 4096:
                raise RecordError(what + ": no kernel name")
            grid = [_int(v, what + " grid", 1, 1 << 31) for v in op.get("grid", [])]
            block = [_int(v, what + " block", 1, 1024) for v in op.get("block", [])]
            if len(grid) != 3 or len(block) != 3:
                raise RecordError(what + ": grid and block are three numbers each")
            params = op.get("params")
            if not isinstance(params, list) or len(params) > 1024:
                raise RecordError(what + ": params")
            parsed, total = [], 0
            for p in params:
                raw = bytes.fromhex(p.get("bytes", "")) if isinstance(p, dict) and isinstance(p.get("bytes"),
                                                                                              str) else None
                if raw is None:
                    raise RecordError(what + ": a parameter without its bytes")
                total += len(raw)
                pointers = []
                for ptr in p.get("pointers", []):
                    at = _int(ptr.get("at") if isinstance(ptr, dict) else None, what + " pointer", 0, len(raw) - WORD)
                    pointers.append(dict(_ref(ptr, sizes, what + " pointer"), at=at))
                places = []
                for place in p.get("scalars", []):
                    scalar = place.get("name") if isinstance(place, dict) else None
                    if scalar not in scalars:
                        raise RecordError(what + ": no such scalar %r" % scalar)
                    at = _int(place.get("at"), what + " scalar", 0, len(raw) - len(scalars[scalar]))
                    places.append({"at": at, "name": scalar})
                parsed.append({"bytes": raw, "pointers": pointers, "scalars": places})
            if total > MAX_PARAM_BYTES:
                raise RecordError(what + ": more than %d bytes of parameters" % MAX_PARAM_BYTES)
            checked.append({"op": "launch", "kernel": name, "grid": grid, "block": block,
                            "shared": _int(op.get("shared", 0), what + " shared", 0, 1 << 20),
                            "cooperative": op.get("cooperative") is True, "params": parsed})
        elif kind == "memset":
            width = op.get("width")
            if width not in (1, 2, 4):
                raise RecordError(what + ": memset width")
            count = _int(op.get("count"), what + " count", 0, 1 << 40)
            checked.append({"op": "memset", "width": width, "count": count,
                            "value": _int(op.get("value"), what + " value", 0, (1 << (8 * width)) - 1),
                            "dst": _ref(op.get("dst"), sizes, what + " dst", width * count)})
        elif kind == "copy":
            count = _int(op.get("count"), what + " count", 0, 1 << 40)
            checked.append({"op": "copy", "count": count, "dst": _ref(op.get("dst"), sizes, what + " dst", count),
                            "src": _ref(op.get("src"), sizes, what + " src", count)})
        else:
            raise RecordError(what + ": unknown op %r" % kind)
    return checked, scratch


# ---- recording, in the solution's process


def _cupti():
    for name in CUPTI_NAMES:
        try:
            return ctypes.CDLL(name)
        except OSError:
            continue
    return None


class Driver:
    """The CUDA driver's functions the recorder and the replayer call (libcuda, by their ABI names)."""

    def __init__(self):
        self.lib = ctypes.CDLL("libcuda.so.1")

    def call(self, name, *args):
        code = getattr(self.lib, name)(*args)
        if code != 0:
            raise RecordError("%s failed (CUresult %d)" % (name, code))

    def function_of(self, handle):
        """The CUfunction behind a launch's handle: CUDA 12/13's runtime launches with a CUkernel cast to a CUfunction
        (crt/host_runtime.h: __cudaGetKernel, then __cudaLaunchKernel), which cuKernelGetFunction turns into the
        current context's CUfunction; a handle that is a CUfunction already is refused there and kept."""
        function = ctypes.c_void_p()
        getter = getattr(self.lib, "cuKernelGetFunction", None)
        if getter is not None and getter(ctypes.byref(function), ctypes.c_void_p(handle)) == 0 and function.value:
            return function.value
        return handle

    def name_of(self, function):
        """A kernel's (mangled) name, from its CUfunction."""
        name = ctypes.c_char_p()
        if self.lib.cuFuncGetName(ctypes.byref(name), ctypes.c_void_p(function)) == 0 and name.value:
            return name.value.decode("utf-8", "replace")
        raise RecordError("the kernel's name cannot be read")

    def param_layout(self, function):
        """[(offset, size)] of a CUfunction's parameters (cuFuncGetParamInfo, CUDA 12.4): read until the driver
        answers CUDA_ERROR_INVALID_VALUE (1) past the last one; any other answer is an error."""
        layout = []
        offset, size = ctypes.c_size_t(), ctypes.c_size_t()
        while len(layout) <= 1024:
            code = self.lib.cuFuncGetParamInfo(ctypes.c_void_p(function), ctypes.c_size_t(len(layout)),
                                               ctypes.byref(offset), ctypes.byref(size))
            if code == 1:
                return layout
            if code != 0:
                raise RecordError("the kernel's parameters cannot be read (CUresult %d)" % code)
            layout.append((offset.value, size.value))
        raise RecordError("a kernel with more than 1024 parameters")

    def load(self, images):
        """Modules of ``images`` (fat binaries) in the current context; the images are kept (the driver's copy of a
        module's image is not documented for cuModuleLoadData). Raises RecordError if none loads."""
        modules, codes = [], []
        for image in images:
            module = ctypes.c_void_p()
            buffer = ctypes.create_string_buffer(image, len(image))
            code = self.lib.cuModuleLoadData(ctypes.byref(module), buffer)
            codes.append(code)
            if code == 0:
                modules.append((module, buffer))
        if not modules:
            raise RecordError("none of the library's device code loads here (CUresult %s)" % codes)
        return modules

    def lookup(self, modules, name):
        """The CUfunction named ``name`` in ``modules``, else None."""
        handle = ctypes.c_void_p()
        for module, _ in modules:
            if self.lib.cuModuleGetFunction(ctypes.byref(handle), module, name.encode()) == 0:
                return handle.value
        return None


class Recorder:
    """What the solution's host code asks of the device, through CUPTI's driver callbacks: allocations always (a
    buffer allocated in an earlier call may be used in this one), the device work only inside ``window``. Runs in
    the submission's own process: what it records is only a claim, which the replay and the judge test."""

    def __init__(self, library=None):
        self.library = library
        self.modules = None  # the library's device code, loaded here at the first call: layouts by kernel name
        self.cupti = _cupti()
        if self.cupti is None:
            raise RecordError("no CUPTI library here")
        self.driver = Driver()
        self.allocations = {}  # address → (its number, bytes), live
        self.sizes = {}  # scratch@<number> → bytes, whether still live or not
        self.ops = self.buffers = self.unreplayable = None
        self._thread = threading.local()  # whether this thread is inside the callback (its own driver calls)
        self._callback = CALLBACK(self._on_call)  # kept: CUPTI holds the pointer
        self.subscriber = ctypes.c_void_p()
        code = self.cupti.cuptiSubscribe(ctypes.byref(self.subscriber), self._callback, None)
        if code != 0:
            raise RecordError("CUPTI refused a subscriber (CUptiResult %d: is a profiler attached?)" % code)
        code = self.cupti.cuptiEnableDomain(1, self.subscriber, DRIVER_DOMAIN)
        if code != 0:
            self.close()
            raise RecordError("CUPTI's driver callbacks could not be enabled (CUptiResult %d)" % code)

    def close(self):
        if self.subscriber:
            self.cupti.cuptiUnsubscribe(self.subscriber)
            self.subscriber = ctypes.c_void_p()

    def begin(self, buffers, scalars=None):
        """Records the device work from now on; ``buffers``: the call's {name: (address, bytes)}; ``scalars``: its
        random scalar arguments, {name: bytes}."""
        failed = None
        if self.modules is None and self.library:
            try:
                self.modules = self.driver.load(fatbins(self.library))
            except RecordError as e:
                self.modules, failed = [], str(e)
        self.ops, self.unreplayable = [], failed
        self.buffers, self.scalars = buffers, scalars or {}

    def end(self):
        """The record of the work since ``begin``: {ops, scratch} (each allocation of the solution's that the work
        uses, numbered in the order of first use, and its bytes), or {unreplayable: why}."""
        ops, self.ops = self.ops, None
        if self.unreplayable:
            return {"unreplayable": self.unreplayable}
        numbers, scratch = {}, []
        for op in ops:
            for ref in _refs(op):
                if ref["buffer"].startswith("scratch@"):
                    if ref["buffer"] not in numbers:
                        numbers[ref["buffer"]] = len(scratch)
                        scratch.append(self.sizes[ref["buffer"]])
                    ref["buffer"] = "scratch:%d" % numbers[ref["buffer"]]
        return {"ops": ops, "scratch": scratch}

    def _ranges(self):
        """The call's buffers and every live allocation (``scratch@<n>``, numbered as allocated)."""
        ranges = Buffers(dict(self.buffers))
        for start, (number, size) in self.allocations.items():
            ranges.ranges["scratch@%d" % number] = (start, size)
        return ranges

    def _on_call(self, _userdata, domain, _cbid, data):
        """Per thread: the driver calls the callback itself makes are not recorded, while another thread's calls at
        the same moment (a solution's own threads) are."""
        if domain != DRIVER_DOMAIN or getattr(self._thread, "inside", False):
            return
        self._thread.inside = True
        try:
            info = CallbackData.from_address(data)
            name = (info.function_name or b"").decode("ascii", "replace")
            if name in V1_ENTRY_POINTS:
                if self.ops is not None and info.site == API_ENTER and not self.unreplayable:
                    self.unreplayable = "the call uses %s, a 32-bit entry point the replay does not read" % name
                return
            self._record(base_name(name), info)
        except Exception as e:  # noqa: a callback must not raise into the driver
            if self.ops is not None and not self.unreplayable:
                self.unreplayable = "the recorder failed: %s" % str(e)[:200]
        finally:
            self._thread.inside = False

    def _record(self, name, info):
        if name in ALLOCS:
            if info.site == API_EXIT and ctypes.c_int.from_address(info.return_value).value == 0:
                params = AllocParams.from_address(info.params)
                number = len(self.sizes)
                self.allocations[params.dptr[0]] = (number, params.bytesize)
                self.sizes["scratch@%d" % number] = params.bytesize
            return
        if name in FREES:
            if info.site == API_ENTER:
                self.allocations.pop(ctypes.c_uint64.from_address(info.params).value, None)
            return
        if self.ops is None or info.site != API_ENTER or self.unreplayable:
            return
        if name in LAUNCHES or name == "cuLaunchKernelEx":
            self._launch(name, info)
        elif name in MEMSETS:
            params = MEMSET_PARAMS[MEMSETS[name]].from_address(info.params)
            dst = self._ranges().find(params.dst)
            if dst is None:
                self.unreplayable = name + " on memory that is not the call's"
            else:
                self.ops.append({"op": "memset", "width": MEMSETS[name], "value": int(params.value),
                                 "count": params.count, "dst": {"buffer": dst[0], "offset": dst[1]}})
        elif name in COPIES:
            params = CopyParams.from_address(info.params)
            ranges = self._ranges()
            dst, src = ranges.find(params.dst), ranges.find(params.src)
            if dst is None or src is None:
                self.unreplayable = name + " between memory that is not the call's (a host copy?)"
            else:
                self.ops.append({"op": "copy", "count": params.count, "dst": {"buffer": dst[0], "offset": dst[1]},
                                 "src": {"buffer": src[0], "offset": src[1]}})
        elif name.startswith(UNREPLAYABLE):
            self.unreplayable = "the call uses %s, which the replay does not issue" % name

    def _launch(self, name, info):
        if name == "cuLaunchKernelEx":
            params = LaunchExParams.from_address(info.params)
            config = params.config.contents
            if config.num_attrs:
                self.unreplayable = "a launch with attributes (clusters, priorities...), which the replay does not set"
                return
            dims, function, values = config, params.f, params.kernel_params
            cooperative = False
        else:
            params = LaunchParams.from_address(info.params)
            dims, function, values = params, params.f, params.kernel_params
            cooperative = LAUNCHES[name]
            if name == "cuLaunchKernel" and params.extra and ctypes.c_void_p.from_address(params.extra).value:
                self.unreplayable = "a launch with its parameters in 'extra', which the replay does not read"
                return
        if not values:
            self.unreplayable = "a launch without kernelParams"
            return
        # The name as CUPTI gives it (cupti_callbacks.h: symbolName, for launches), the layout from the library's own
        # device code by that name: the same CUfunction the replay will use, and no foreign handle asked about.
        name = (info.symbol_name or b"").decode("utf-8", "replace")
        own = self.driver.lookup(self.modules or [], name) if name else None
        if own is None:
            function = self.driver.function_of(function)
            name = name or self.driver.name_of(function)
        layout = self.driver.param_layout(own if own is not None else function)
        ranges = self._ranges()
        self.ops.append({"op": "launch", "kernel": name,
                         "grid": [dims.gx, dims.gy, dims.gz], "block": [dims.bx, dims.by, dims.bz],
                         "shared": dims.shared, "cooperative": cooperative,
                         "params": [param_record(ctypes.string_at(values[i], size), ranges, self.scalars)
                                    for i, (_, size) in enumerate(layout)]})


# ---- the solution's device code


def fatbins(library_path, limit=256 << 20):
    """The fat binaries in a shared library's ``.nv_fatbin`` section (nvcc's: cuda_runtime's registration reads the
    same), parsed as plain ELF64 with bounds checked, never loaded: the library's host code does not run. Each is
    bytes that cuModuleLoadData takes."""
    with open(library_path, "rb") as f:
        data = f.read(limit + 1)
    if len(data) > limit or data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        raise RecordError("the library is not a little-endian ELF64 file")
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    if shentsize != 64 or shoff + shnum * 64 > len(data) or shstrndx >= shnum:
        raise RecordError("the library's section table is out of bounds")

    def section(i):
        _name, kind, _flags, _addr, offset, size = struct.unpack_from("<IIQQQQ", data, shoff + i * 64)
        if kind == 8:  # SHT_NOBITS (.bss): a size, and no bytes in the file
            return _name, offset, 0
        if offset + size > len(data):
            raise RecordError("a section of the library is out of bounds")
        return _name, offset, size

    _, names_at, names_size = section(shstrndx)
    names = data[names_at:names_at + names_size]
    found = []
    for i in range(shnum):
        name_at, offset, size = section(i)
        end = names.find(b"\0", name_at)
        if names[name_at:end] == b".nv_fatbin":
            found.extend(_containers(data[offset:offset + size]))
    if not found:
        raise RecordError("the library holds no device code (.nv_fatbin)")
    return found


def _containers(blob):
    """Fat binary containers laid end to end (each: magic, version, header size, then the size of what follows)."""
    out, at = [], 0
    while at + 16 <= len(blob):
        magic, _version, header, size = struct.unpack_from("<IHHQ", blob, at)
        if magic != FATBIN_MAGIC:
            at += 8  # containers are 8-byte aligned; padding between them is zero
            continue
        end = at + header + size
        if header < 16 or end > len(blob):
            raise RecordError("a fat binary in the library is out of bounds")
        out.append(blob[at:end])
        at = (end + 7) // 8 * 8
    return out


# ---- replaying, in a process that never loaded the library


class Replayer:
    """The solution's device code, loaded from its fat binaries into the current context, and a call's recorded
    work issued on it. ``sizes``: the call's buffers' bytes by name."""
    CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8

    def __init__(self, images, torch):
        self.driver = Driver()
        self.torch = torch
        self.functions = {}
        self.modules = self.driver.load(images)

    def function(self, name):
        if name not in self.functions:
            found = self.driver.lookup(self.modules, name)
            if found is None:
                raise RecordError("the kernel %s is not in the solution's device code (a library's kernel, or code "
                                  "built at run time?)" % name[:200])
            self.functions[name] = found
        return self.functions[name]

    def prepare(self, ops, scratch, addresses, scalars, stream):
        """The call's work as driver calls ready to make on ``stream``, their arguments built here once (a call's
        issue makes no Python object: several short kernels are not spaced out by the replay's own overhead).
        ``addresses`` are this process's {buffer: address} of the call's buffers, ``scalars`` the bytes of its
        scalar arguments; scratch allocations are made here (zeroed). Checks each launch's parameters against the
        kernel's own layout. Returns a Call."""
        lib = self.driver.lib
        scratch_tensors = [self.torch.zeros(size, dtype=self.torch.uint8, device="cuda") for size in scratch]
        addresses = dict(addresses, **{"scratch:%d" % i: t.data_ptr() for i, t in enumerate(scratch_tensors)})
        stream = ctypes.c_void_p(stream)
        steps, kept = [], []
        for op in ops:
            if op["op"] == "launch":
                function = self.function(op["kernel"])
                layout = self.driver.param_layout(function)
                if [size for _, size in layout] != [len(p["bytes"]) for p in op["params"]]:
                    raise RecordError("the record's parameters of %s do not match the kernel's" % op["kernel"][:200])
                values = []
                for p in op["params"]:
                    raw = bytearray(p["bytes"])
                    for ptr in p["pointers"]:
                        struct.pack_into("<Q", raw, ptr["at"], addresses[ptr["buffer"]] + ptr["offset"])
                    for place in p["scalars"]:
                        value = scalars[place["name"]]
                        raw[place["at"]:place["at"] + len(value)] = value
                    values.append(ctypes.create_string_buffer(bytes(raw), max(1, len(raw))))
                array = (ctypes.c_void_p * max(1, len(values)))(*[ctypes.addressof(v) for v in values])
                kept.append((values, array))
                if op["shared"] > 48 * 1024:
                    self.driver.call("cuFuncSetAttribute", ctypes.c_void_p(function),
                                     self.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, op["shared"])
                dims = [ctypes.c_uint(v) for v in op["grid"] + op["block"]] + [ctypes.c_uint(op["shared"])]
                if op["cooperative"]:
                    steps.append(("launch", lib.cuLaunchCooperativeKernel,
                                  (ctypes.c_void_p(function), *dims, stream, array)))
                else:
                    steps.append(("launch", lib.cuLaunchKernel, (ctypes.c_void_p(function), *dims, stream, array, None)))
            elif op["op"] == "memset":
                dst = ctypes.c_uint64(addresses[op["dst"]["buffer"]] + op["dst"]["offset"])
                fn = {1: lib.cuMemsetD8Async, 2: lib.cuMemsetD16Async, 4: lib.cuMemsetD32Async}[op["width"]]
                value = {1: ctypes.c_ubyte, 2: ctypes.c_ushort, 4: ctypes.c_uint}[op["width"]](op["value"])
                steps.append(("memset", fn, (dst, value, ctypes.c_size_t(op["count"]), stream)))
            else:
                steps.append(("copy", lib.cuMemcpyDtoDAsync_v2, (
                    ctypes.c_uint64(addresses[op["dst"]["buffer"]] + op["dst"]["offset"]),
                    ctypes.c_uint64(addresses[op["src"]["buffer"]] + op["src"]["offset"]),
                    ctypes.c_size_t(op["count"]), stream)))
        return Call(steps, kept, scratch_tensors)


@dataclass
class Call:
    """One call's recorded work, ready: ``issue()`` enqueues it all, in the recorded order."""
    steps: list
    kept: list  # the parameters' buffers the steps point at
    scratch: list

    def issue(self):
        for kind, fn, args in self.steps:
            code = fn(*args)
            if code != 0:
                raise RecordError("the replay's %s failed (CUresult %d)" % (kind, code))
