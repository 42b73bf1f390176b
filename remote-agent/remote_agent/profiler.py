"""Profile mode: the checked kernel run once per test under the vendor's profiler (Nsight Compute on NVIDIA,
rocprofv3 on ROCm), each test's calls inside an NVTX/ROCTX range ``kr-test-<id>`` so that every kernel the
solution launched is attributed to its test; per kernel: device time, achieved DRAM bandwidth and its share of
peak, SM throughput share, occupancy, registers, shared memory, and the tool's own one-line bottleneck hint."""
import base64
import csv
import glob
import hashlib
import os
import re
import shutil
import subprocess
import threading
import zipfile

from remote_agent import sandbox

RANGE_PREFIX = "kr-test-"
# The report travels inside signed event lines (at most 1 MiB each, and dstack ships a terminal's log): pieces of
# this many bytes, base64 (4/3 larger) in a PROFILE_REPORT event each.
REPORT_PIECE_BYTES = 192 * 1024
# Larger reports are not sent (the table still is): the service stores at most this much per submission.
MAX_REPORT_BYTES = 48 * 1024 * 1024

# Nsight Compute's metrics (ncu --query-metrics; the names the SpeedOfLight, Occupancy and LaunchStats sections
# show): the device time, DRAM bytes per second and share of peak, SM throughput share, achieved occupancy.
NCU_METRICS = {
    "gpu__time_duration.sum": "duration_ns",
    "dram__bytes.sum.per_second": "dram_bytes_per_second",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed": "dram_pct_of_peak",
    "sm__throughput.avg.pct_of_peak_sustained_elapsed": "sm_pct_of_peak",
    "sm__warps_active.avg.pct_of_peak_sustained_active": "achieved_occupancy_pct",
    "launch__registers_per_thread": "registers_per_thread",
    "launch__shared_mem_per_block_static": "shared_mem_static_bytes",
    "launch__shared_mem_per_block_dynamic": "shared_mem_dynamic_bytes",
    "launch__grid_size": "grid_size",
    "launch__block_size": "block_size",
}
NCU_SECTIONS = ("SpeedOfLight", "Occupancy", "LaunchStats")


def tool_name(kind):
    """What a toolchain kind ('nvcc' or 'hipcc') is profiled with, as the author reads it."""
    return "rocprofv3" if kind == "hipcc" else "Nsight Compute"


def find_tool(kind):
    """The profiler for a toolchain kind ('nvcc' or 'hipcc'), or None."""
    if kind == "hipcc":
        return shutil.which("rocprofv3")
    for candidate in (shutil.which("ncu"), "/usr/local/cuda/bin/ncu"):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    return None


def ncu_command(ncu, report_base, log_file, argv):
    """One Nsight Compute run over the worker: only kernels inside our per-test ranges (``regex:`` is needed, a
    plain ``kr-test-*/`` matches nothing), the three sections a kernel author reads first plus our metrics.
    Clocks stay ncu's default (locked to base) so that profiles compare between runs; caches are flushed."""
    return [ncu, "--nvtx", "--nvtx-include", "regex:" + RANGE_PREFIX + ".*/", "--target-processes", "all",
            *[arg for section in NCU_SECTIONS for arg in ("--section", section)],
            "--metrics", ",".join(NCU_METRICS), "--export", report_base, "--force-overwrite",
            "--log-file", log_file, *argv]


def tool_refusal(log_text):
    """The operator's problem, not the kernel's, when ncu could not profile at all: the message to say so, or None.
    ERR_NVGPUCTRPERM is ncu's code for a user the driver does not let read the performance counters (by default
    only root may; the service runs agents as an unprivileged user)."""
    if "ERR_NVGPUCTRPERM" in (log_text or ""):
        return ("this GPU machine does not let the agent's user read the GPU's performance counters "
                "(Nsight Compute: ERR_NVGPUCTRPERM); its operator can allow it with the NVIDIA driver option "
                "NVreg_RestrictProfilingToAdminUsers=0")
    return None


class Output:
    """What Nsight Compute prints (its figures as CSV, on its stdout): a pipe made by the agent before the profiler
    starts and read by the agent alone, so that the verdict never lies where a process of the job's room could
    write it. The worker under the profiler inherits the profiler's stdout; it speaks on a pipe of its own instead
    (``PROTOCOL_FD``) and drops every copy of this one before the solution's library is loaded
    (``VARIABLE`` names it). No other process of the room can reach the profiler's (Landlock: landlock.py)."""

    VARIABLE = "KR_PROFILER_PIPE"  # the profiler's output, which the worker under it must not keep
    PROTOCOL_FD = "KR_PROTOCOL_FD"  # the descriptor the worker under it speaks on instead of its stdout

    def __init__(self, reading=True):
        """``reading``: read from now on (else from ``read()``: a warm agent forks after it starts the profiler,
        and starts no thread before its forks; the pipe holds 64 KiB meanwhile, and ncu prints nothing there before
        its target has a device context)."""
        self.read_fd, self.write_fd = os.pipe()
        self.inode = os.fstat(self.read_fd).st_ino
        self.protocol_read, self.protocol_write = os.pipe()  # the worker's own channel to the agent
        self.chunks = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        if reading:
            self.read()

    def read(self):
        self.reader.start()

    def _read(self):
        while True:
            chunk = os.read(self.read_fd, 1 << 16)
            if not chunk:
                return
            self.chunks.append(chunk)

    def environment(self, env):
        """The worker's environment under the profiler: where it speaks, and the pipe it must not keep."""
        return dict(env, **{self.VARIABLE: str(self.inode), self.PROTOCOL_FD: str(self.protocol_write)})

    def started(self, process):
        """The profiler has its copies: the agent's go (so that each pipe ends when the profiler does), and the
        worker's lines are read from its own channel."""
        for fd in (self.write_fd, self.protocol_write):
            if fd is not None:
                os.close(fd)
        self.write_fd = self.protocol_write = None
        if process is not None:
            process.stdout = os.fdopen(self.protocol_read, "r")
            self.protocol_read = None

    def text(self, timeout=30.0):
        """Everything printed, once the profiler has ended (its end closes the pipe)."""
        self.started(None)
        self.reader.join(timeout)
        return b"".join(self.chunks).decode("utf-8", "replace")

    def close(self):
        self.started(None)
        for name in ("protocol_read",) + (("read_fd",) if not self.reader.is_alive() else ()):  # unless being read
            if getattr(self, name) is not None:
                os.close(getattr(self, name))
                setattr(self, name, None)


def verify_command(ncu, argv, log_file=None):
    """Nsight Compute around the judge's calls: only the device time of each kernel in our per-test ranges, at the
    clocks the device runs at and with caches flushed (the oracle's settings, docs/benchmarks.md). Its figures go to
    its stdout (an Output) as the raw page's CSV when the run ends: no report to import with a second ncu (0.6-0.8 s
    on the H100, selftest/probes/ncu_live_csv.py). It takes no descriptor's path as a log file (the H100: "cannot be
    used as the output log file"). ``log_file``: a file instead (the probes' way, outside any room)."""
    return [ncu, "--nvtx", "--nvtx-include", "regex:" + RANGE_PREFIX + ".*/", "--target-processes", "all",
            "--clock-control", "none", "--cache-control", "all", "--metrics", "gpu__time_duration.sum",
            "--csv", "--page", "raw", "--print-units", "base", *(["--log-file", log_file] if log_file else []), *argv]


def read_verify_text(text):
    """Per test id, the kernels of a verify_command run: the CSV after ncu's own ==PROF== lines in its output."""
    start = text.find('"ID"')
    return ncu_tests(text[start:], "") if start >= 0 else {}


# A claimed time this share of the profiler's or more is within noise; both shares are relative to the figure, no
# fixed microseconds that would dominate at 2 us. At >= SMALL_MS the replay's medians were within 1% of Nsight
# Compute's for every self-test kernel; below, the events' figure leaves out launch work ncu counts (0.6-0.9 us), and
# ncu's own figure moves 8.7-10.3% between processes at 2.6 us (docs/benchmarks.md, the trusted replay): honest
# leaky-relu at 1 x 1 (2.0-2.5 us) was audited at 0.69-0.84 of ncu in the replay's runs, and two of three audits
# of it came out unverified at the 0.75 this was (docs/evidence/replay-h100/run9-*).
CROSS_CHECK_SHARE = 0.9
CROSS_CHECK_SMALL_SHARE = 0.6
SMALL_MS = 0.020


def cross_check(claims, tests):
    """The worker's per-test claims ({test_id, name, runtime_ms}) against the profiler's per-test kernels: status
    "verified", or "unverified" with a problem per test that the profiler contradicts (or saw no kernel in)."""
    rows, problems = [], []
    for claim in claims:
        kernels = tests.get(claim.get("test_id"), [])
        times = [k["duration_ms"] for k in kernels if k.get("duration_ms") is not None]
        seen = sum(times) if times else None
        claimed = claim.get("runtime_ms")
        rows.append({"test_id": claim.get("test_id"), "name": claim.get("name"), "claimed_ms": claimed,
                     "profiler_ms": seen, "kernels": len(kernels),
                     "ratio": claimed / seen if seen and claimed is not None else None})
        where = "test %s (%s)" % (claim.get("test_id"), claim.get("name"))
        if seen is None:
            problems.append(where + ": the profiler saw no kernel of the solution's")
        elif claimed is None or claimed < (CROSS_CHECK_SHARE if seen >= SMALL_MS else CROSS_CHECK_SMALL_SHARE) * seen:
            problems.append(where + ": timed at %s ms, but the profiler saw %.6f ms of kernels" % (claimed, seen))
    return {"status": "unverified" if problems else "verified", "tests": rows, "problems": problems}


def ncu_import_commands(ncu, report):
    """The report read back: the raw page (every metric, base units) and the details page with each rule's
    one-line advice."""
    return ([ncu, "--import", report, "--csv", "--page", "raw", "--print-units", "base"],
            [ncu, "--import", report, "--csv", "--page", "details", "--print-rule-details"])


def rocprof_command(rocprof, out_dir, argv):
    """rocprofv3 over the worker: kernel dispatches and ROCTX ranges (PyTorch's NVTX calls are ROCTX on ROCm) as
    CSV (rocprofiler-sdk, docs/how-to/using-rocprofv3.rst: --kernel-trace, --marker-trace, -d, -o, -f csv)."""
    return [rocprof, "--kernel-trace", "--marker-trace", "-d", out_dir, "-o", "profile", "--output-format", "csv",
            "--", *argv]


def _number(text):
    if text is None:
        return None
    text = str(text).strip().replace(",", "")
    if not text or text in ("n/a", "N/A"):
        return None
    try:
        value = float(text)
    except ValueError:
        return None
    return int(value) if value.is_integer() else value


def _test_of_range(text):
    """The test id in an NVTX column such as ``772  "<default domain>:kr-test-3:none:..."`` or a ROCTX message."""
    match = re.search(re.escape(RANGE_PREFIX) + r"(\d+)", text or "")
    return int(match.group(1)) if match else None


def _csv_rows(text):
    """The CSV part of ncu's output (it may print ==PROF== lines first)."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith('"ID"')), None)
    return [] if start is None else list(csv.reader(lines[start:]))


def parse_ncu_raw(text):
    """Kernels from ``--page raw --csv --print-units base``: a header row of metric names, a row of units, then a
    row per kernel. Returns [{test_id, kernel, ...NCU_METRICS' names}] in launch order."""
    rows = _csv_rows(text)
    if len(rows) < 2:
        return []
    header = rows[0]
    col = {name: i for i, name in enumerate(header)}
    nvtx = next((i for i, name in enumerate(header) if "Push/Pop_Range" in name), None)
    kernels = []
    for row in rows[1:]:
        if len(row) != len(header) or not row[col.get("ID", 0)].strip().isdigit():
            continue  # the units row, or a short line
        kernel = {"id": int(row[col["ID"]]), "test_id": _test_of_range(row[nvtx]) if nvtx is not None else None,
                  "kernel": row[col["Kernel Name"]] if "Kernel Name" in col else None}
        for metric, name in NCU_METRICS.items():
            kernel[name] = _number(row[col[metric]]) if metric in col else None
        kernels.append(kernel)
    return kernels


def parse_ncu_hints(text):
    """{kernel id: the first rule advice} from ``--page details --print-rule-details``: the Speed Of Light
    bottleneck rule first (ncu's own summary of what limits the kernel), else the first optimisation hint."""
    rows = _csv_rows(text)
    if not rows:
        return {}
    col = {name: i for i, name in enumerate(rows[0])}
    needed = ("ID", "Rule Name", "Rule Type", "Rule Description")
    if any(name not in col for name in needed):
        return {}
    hints = {}
    for row in rows[1:]:
        if len(row) <= col["Rule Description"] or not row[col["ID"]].strip().isdigit():
            continue
        description = row[col["Rule Description"]].strip()
        if not description:
            continue
        kernel, rule, kind = int(row[col["ID"]]), row[col["Rule Name"]], row[col["Rule Type"]]
        rank = 0 if rule == "SOLBottleneck" else 1 if kind in ("OPT", "WRN") else 2
        if kernel not in hints or rank < hints[kernel][0]:
            hints[kernel] = (rank, rule, description)
    return {k: {"rule": rule, "advice": text} for k, (rank, rule, text) in hints.items()}


def ncu_tests(raw_text, details_text):
    """Per test id, the kernels it launched with their figures and ncu's hint."""
    hints = parse_ncu_hints(details_text)
    tests = {}
    for kernel in parse_ncu_raw(raw_text):
        hint = hints.get(kernel["id"])
        duration = kernel.pop("duration_ns")
        kernel["duration_ms"] = duration / 1e6 if duration is not None else None
        bandwidth = kernel.pop("dram_bytes_per_second")
        kernel["dram_gbs"] = bandwidth / 1e9 if bandwidth is not None else None
        kernel["hint"] = hint["advice"] if hint else None
        kernel["hint_rule"] = hint["rule"] if hint else None
        tests.setdefault(kernel.pop("test_id"), []).append(kernel)
    return tests


def read_tests(kind, tool, report_base, hints=True, preexec=None, env=None):
    """Per test id, the kernels a run under ``tool`` recorded at ``report_base`` (rocprofv3's folder, or ncu's
    report without its .ncu-rep suffix); ``hints``: with ncu's rule advice (one more pass over the report). ncu
    reads the report started with ``preexec`` (in the job's room: the report is the job's writing)."""
    if kind == "hipcc":
        return parse_rocprof(report_base)
    raw_cmd, details_cmd = ncu_import_commands(tool, report_base + ".ncu-rep")

    def read(argv):
        return subprocess.run(argv, capture_output=True, text=True, timeout=120, preexec_fn=preexec, env=env,
                              stdin=subprocess.DEVNULL).stdout

    return ncu_tests(read(raw_cmd), read(details_cmd) if hints else "")


def parse_rocprof(out_dir):
    """Per test id, the kernels from rocprofv3's ``*_kernel_trace.csv`` (columns as in rocprofiler-sdk's docs:
    Kernel_Name, Start_Timestamp, End_Timestamp in ns, LDS_Block_Size, VGPR_Count, SGPR_Count, Workgroup_Size_*,
    Grid_Size_*), each given to the ROCTX range ``kr-test-<id>`` of ``*_marker_api_trace.csv`` it lies in. The
    trace has no bandwidth, throughput or occupancy counters: those stay null."""
    def rows(pattern):
        found = sorted(glob.glob(os.path.join(out_dir, "**", pattern), recursive=True))
        try:
            with sandbox.open_plain(found[0], "r", newline="", encoding="utf-8", errors="replace") as f:
                return list(csv.DictReader(f))
        except (IndexError, OSError):
            return []

    ranges = []
    for row in rows("*marker_api_trace.csv"):
        test = _test_of_range(row.get("Function") or row.get("Message") or "")
        start, end = _number(row.get("Start_Timestamp")), _number(row.get("End_Timestamp"))
        if test is not None and start is not None and end is not None:
            ranges.append((start, end, test))
    tests = {}
    for row in rows("*kernel_trace.csv"):
        start, end = _number(row.get("Start_Timestamp")), _number(row.get("End_Timestamp"))
        if start is None or end is None:
            continue
        test = next((t for s, e, t in ranges if s <= start and end <= e), None)
        if test is None:
            continue  # not the solution's: set-up outside every test range
        block = [_number(row.get("Workgroup_Size_" + a)) or 1 for a in "XYZ"]
        grid = [_number(row.get("Grid_Size_" + a)) or 1 for a in "XYZ"]
        tests.setdefault(test, []).append({
            "kernel": row.get("Kernel_Name"), "duration_ms": (end - start) / 1e6, "dram_gbs": None,
            "dram_pct_of_peak": None, "sm_pct_of_peak": None, "achieved_occupancy_pct": None,
            "registers_per_thread": _number(row.get("VGPR_Count")), "shared_mem_static_bytes":
                _number(row.get("LDS_Block_Size")), "shared_mem_dynamic_bytes": None,
            "block_size": block[0] * block[1] * block[2],
            # rocprofv3's grid sizes count work-items, ncu's count blocks.
            "grid_size": (grid[0] * grid[1] * grid[2]) // max(1, block[0] * block[1] * block[2]),
            "hint": None, "hint_rule": None})
    return tests


def report_pieces(path, limit=None):
    """The report file as PROFILE_REPORT event fields, in order; [] when it is missing or larger than ``limit``
    bytes (the payload's ``report_limit_bytes``: a dstack run's log has a quota) or MAX_REPORT_BYTES."""
    limit = MAX_REPORT_BYTES if limit is None else min(limit, MAX_REPORT_BYTES)
    try:
        with sandbox.open_plain(path) as f:
            if os.fstat(f.fileno()).st_size > limit:
                return []
            data = f.read(limit + 1)
    except OSError:
        return []
    if len(data) > limit:
        return []
    digest = hashlib.sha256(data).hexdigest()
    count = max(1, -(-len(data) // REPORT_PIECE_BYTES))
    name = os.path.basename(path)
    return [{"name": name, "part": i + 1, "parts": count, "size": len(data), "sha256": digest,
             "data": base64.b64encode(data[i * REPORT_PIECE_BYTES:(i + 1) * REPORT_PIECE_BYTES]).decode("ascii")}
            for i in range(count)]


def report_size(path):
    """The report file's size (read as the pieces are: no link followed), or None when there is none."""
    try:
        with sandbox.open_plain(path) as f:
            return os.fstat(f.fileno()).st_size
    except OSError:
        return None


def archive_dir(out_dir, target):
    """rocprofv3 writes a folder of CSV files: one zip of its plain files (no link followed) is the report."""
    path = target + ".zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for folder, _, names in os.walk(out_dir):
            for name in sorted(names):
                full = os.path.join(folder, name)
                try:
                    with sandbox.open_plain(full) as f:
                        archive.writestr(os.path.relpath(full, out_dir), f.read())
                except OSError:
                    continue
    return path

