"""The trusted replay's parts that need no GPU: the record (made by the submission's process, so checked as an
attacker's), the device code read from a library without loading it, and the agent's reading of a timed run.
The replay itself runs on the device (selftest/adversarial: replay-*)."""
import ctypes
import os
import shutil
import struct
import subprocess
import tempfile
import threading
import unittest

from remote_agent import agent, catalog, replay, verification

SIZES = {"input": 4096, "output": 4096}


def launch(**changes):
    op = {"op": "launch", "kernel": "_Z5leakyPKfPfi", "grid": [4, 1, 1], "block": [256, 1, 1], "shared": 0,
          "params": [{"bytes": "00" * 8, "pointers": [{"at": 0, "buffer": "input", "offset": 0}]},
                     {"bytes": "00" * 8, "pointers": [{"at": 0, "buffer": "output", "offset": 0}]},
                     {"bytes": struct.pack("<i", 1024).hex(), "pointers": []}]}
    op.update(changes)
    return op


class RecordTest(unittest.TestCase):
    def test_driver_names_lose_their_version_and_stream_suffixes(self):
        self.assertEqual("cuLaunchKernel", replay.base_name("cuLaunchKernel_ptsz"))
        self.assertEqual("cuMemsetD8", replay.base_name("cuMemsetD8_v2_ptds"))
        self.assertEqual("cuMemcpyDtoDAsync", replay.base_name("cuMemcpyDtoDAsync_v2_ptsz"))

    def test_a_parameter_word_that_points_into_a_buffer_is_recorded_as_that_buffer(self):
        buffers = replay.Buffers({"input": (0x7000_0000, 4096), "scratch@0": (0x9000_0000, 64)})
        raw = struct.pack("<QQi4x", 0x7000_0010, 0x9000_0040, 7)
        record = replay.param_record(raw, buffers)
        self.assertEqual([{"at": 0, "buffer": "input", "offset": 16}], record["pointers"],
                         "one past the end of scratch@0 is not inside it")
        self.assertEqual(raw.hex(), record["bytes"])

    def test_the_calls_random_scalars_are_found_in_the_parameters_and_only_known_ones_parse(self):
        alpha = replay.scalar_bytes("float", 0.137)
        raw = struct.pack("<Q", 5) + alpha + struct.pack("<f", 0.5)
        record = replay.param_record(raw, replay.Buffers(), {"alpha": alpha})
        self.assertEqual([{"at": 8, "name": "alpha"}], record["scalars"])
        op = launch(params=[record])
        ops, _ = replay.parse({"ops": [op], "scratch": []}, SIZES, {"alpha": alpha})
        self.assertEqual([{"at": 8, "name": "alpha"}], ops[0]["params"][0]["scalars"])
        self.assertEqual("_Z5leakyPKfPfi", ops[0]["kernel"], "the kernel keeps its name")
        with self.assertRaisesRegex(replay.RecordError, "no such scalar"):
            replay.parse({"ops": [op], "scratch": []}, SIZES, {})
        op["params"][0]["scalars"] = [{"at": 14, "name": "alpha"}]
        with self.assertRaises(replay.RecordError):
            replay.parse({"ops": [op], "scratch": []}, SIZES, {"alpha": alpha})

    def test_the_callback_skips_only_its_own_threads_nested_calls_and_refuses_32_bit_entry_points(self):
        recorder = replay.Recorder.__new__(replay.Recorder)
        recorder._thread = threading.local()
        recorder.ops, recorder.unreplayable, seen = [], None, []
        recorder._record = lambda name, info: seen.append(name)

        def call(name, site=replay.API_ENTER):
            data = replay.CallbackData(site=site, function_name=name.encode())
            recorder._on_call(None, replay.DRIVER_DOMAIN, 0, ctypes.addressof(data))

        recorder._thread.inside = True  # this thread is inside the callback: its own driver calls
        call("cuLaunchKernel")
        self.assertEqual([], seen)
        other = threading.Thread(target=call, args=("cuLaunchKernel_ptsz",))
        other.start()
        other.join()
        self.assertEqual(["cuLaunchKernel"], seen, "another thread's launch at that moment is recorded")
        recorder._thread.inside = False
        call("cuMemsetD32_v2")
        self.assertEqual(["cuLaunchKernel", "cuMemsetD32"], seen)
        self.assertIsNone(recorder.unreplayable)
        call("cuMemsetD32")
        self.assertIn("32-bit entry point", recorder.unreplayable)
        self.assertFalse(recorder._thread.inside)

    def test_scratch_is_numbered_by_first_use_with_its_size(self):
        recorder = replay.Recorder.__new__(replay.Recorder)
        recorder.sizes = {"scratch@3": 64, "scratch@5": 128}
        recorder.unreplayable = None
        recorder.ops = [{"op": "memset", "dst": {"buffer": "scratch@5", "offset": 0}, "width": 4, "value": 0,
                         "count": 32},
                        launch(params=[{"bytes": "00" * 8, "pointers": [{"at": 0, "buffer": "scratch@3",
                                                                         "offset": 8}]}])]
        record = recorder.end()
        self.assertEqual([128, 64], record["scratch"])
        self.assertEqual("scratch:0", record["ops"][0]["dst"]["buffer"])
        self.assertEqual("scratch:1", record["ops"][1]["params"][0]["pointers"][0]["buffer"])
        ops, scratch = replay.parse(record, SIZES)
        self.assertEqual([128, 64], scratch)

    def test_a_plain_record_parses(self):
        ops, scratch = replay.parse({"ops": [launch(), {"op": "memset", "width": 4, "value": 0, "count": 1024,
                                                        "dst": {"buffer": "output", "offset": 0}},
                                             {"op": "copy", "count": 4096, "dst": {"buffer": "output", "offset": 0},
                                              "src": {"buffer": "input", "offset": 0}}], "scratch": []}, SIZES)
        self.assertEqual(["launch", "memset", "copy"], [op["op"] for op in ops])
        self.assertEqual(bytes(8), ops[0]["params"][0]["bytes"])
        self.assertEqual([], scratch)

    def test_records_an_attacker_might_send_are_refused_with_a_reason(self):
        bad = {
            "unknown buffer": [launch(params=[{"bytes": "00" * 8, "pointers": [{"at": 0, "buffer": "judge",
                                                                                "offset": 0}]}])],
            "a pointer past its parameter": [launch(params=[{"bytes": "00" * 8, "pointers": [
                {"at": 4, "buffer": "input", "offset": 0}]}])],
            "a memset past the buffer": [{"op": "memset", "width": 4, "value": 0, "count": 1025,
                                          "dst": {"buffer": "output", "offset": 0}}],
            "a copy past the buffer": [{"op": "copy", "count": 16, "dst": {"buffer": "output", "offset": 4090},
                                        "src": {"buffer": "input", "offset": 0}}],
            "a negative offset": [{"op": "copy", "count": 16, "dst": {"buffer": "output", "offset": -8},
                                   "src": {"buffer": "input", "offset": 0}}],
            "a block too big": [launch(block=[2048, 1, 1])],
            "a grid of two": [launch(grid=[1, 1])],
            "a boolean size": [launch(shared=True)],
            "too many parameter bytes": [launch(params=[{"bytes": "00" * 5000, "pointers": []}])],
            "not hex": [launch(params=[{"bytes": "zz", "pointers": []}])],
            "an unknown op": [{"op": "host", "call": "system"}],
            "no ops": [],
            "too many ops": [launch()] * (replay.MAX_OPS + 1),
        }
        for why, ops in bad.items():
            with self.subTest(why), self.assertRaises((replay.RecordError, ValueError)):
                replay.parse({"ops": ops, "scratch": []}, SIZES)
        with self.assertRaises(replay.RecordError):
            replay.parse({"ops": [launch()], "scratch": [replay.MAX_SCRATCH_BYTES + 1]}, SIZES)
        with self.assertRaisesRegex(replay.RecordError, "cuGraphLaunch"):
            replay.parse({"unreplayable": "the call uses cuGraphLaunch"}, SIZES)
        with self.assertRaises(replay.RecordError):
            replay.parse(None, SIZES)


def fatbins_of(source):
    """replay.fatbins of ``source`` built by nvcc into a shared library (for sm_90)."""
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "k.cu")
        with open(path, "w") as f:
            f.write(source)
        library = os.path.join(folder, "k.so")
        subprocess.run(["nvcc", "-shared", "-Xcompiler", "-fPIC", "-arch=sm_90", "-o", library, path],
                       check=True, capture_output=True)
        return replay.fatbins(library)


class DeviceCodeTest(unittest.TestCase):
    @unittest.skipUnless(shutil.which("nvcc"), "nvcc builds the library")
    def test_the_fat_binaries_are_read_from_the_library_without_loading_it(self):
        images = fatbins_of("__global__ void k(float* x) { x[threadIdx.x] = 1; }\n"
                            "extern \"C\" void solution(float* x) { k<<<1, 32>>>(x); }\n")
        self.assertTrue(images)
        for image in images:
            self.assertEqual(replay.FATBIN_MAGIC, struct.unpack_from("<I", image)[0])

    @unittest.skipUnless(shutil.which("nvcc"), "nvcc builds the library")
    def test_a_library_with_a_large_host_bss_is_read(self):
        self.assertTrue(fatbins_of("static float host[1 << 22];\n__global__ void k(float* x) { x[threadIdx.x] = 1; }\n"
                                   "extern \"C\" void solution(float* x) { host[0] = 1; k<<<1, 32>>>(x); }\n"),
                        "its .bss (no bytes in the file) is no bound to check")

    def test_a_file_that_is_not_a_library_or_lies_about_its_sections_is_refused(self):
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "x.so")
            elf = bytearray(b"\x7fELF\x02\x01" + bytes(58))
            struct.pack_into("<Q", elf, 0x28, 1 << 40)  # a section table far past the end
            struct.pack_into("<HHH", elf, 0x3A, 64, 10, 1)
            for text in (b"not an elf", bytes(elf)):
                with open(path, "wb") as f:
                    f.write(text)
                with self.assertRaises(replay.RecordError):
                    replay.fatbins(path)
        blob = struct.pack("<IHHQ", replay.FATBIN_MAGIC, 1, 16, 1 << 30)
        with self.assertRaises(replay.RecordError):
            replay._containers(blob)


class TimedRunTest(unittest.TestCase):
    problem = catalog.load("leaky-relu")

    def outcome(self, status="PASSED", samples=100, iterations=100, calls=None, failure=None):
        results = [{"test_id": c["test_id"], "status": "PASSED", "samples": samples} for c in self.problem.cases]
        figure = {"median": 0.01, "iterations": iterations}
        calls = calls if calls is not None else {c["test_id"]: {"timing": figure} for c in self.problem.cases}
        return verification.Outcome(status, results, failure=failure, calls=calls)

    def test_figures_count_only_for_samples_the_judge_checked(self):
        figures, why = agent.timed_figures(self.outcome(), self.problem, "the replay")
        self.assertIsNone(why)
        self.assertEqual(0.01, figures[1]["median"])
        figures, why = agent.timed_figures(self.outcome(samples=20), self.problem, "the replay")
        self.assertIsNone(figures)
        self.assertIn("more samples than the judge checked", why)
        figures, why = agent.timed_figures(self.outcome(calls={}), self.problem, "the replay")
        self.assertIn("no figures", why)

    def test_a_replay_that_fails_says_why(self):
        crashed = verification.Outcome("CRASHED", [], calls={"error": "none of the library's device code loads"})
        self.assertIn("device code loads", agent.timed_figures(crashed, self.problem, "the replay")[1])
        said = self.outcome("FAILED", calls={1: {"unreplayable": "the kernel k is not in the device code"}},
                            failure={"test_id": 1, "debug_info": {}})
        self.assertIn("not in the device code", agent.timed_figures(said, self.problem, "the replay")[1])
        wrong = self.outcome("FAILED", calls={1: {}}, failure={"test_id": 1, "debug_info": {"sample": 3}})
        self.assertIn("depends on more than its record", agent.timed_figures(wrong, self.problem, "the replay")[1])

    def test_what_cannot_be_replayed_is_named_before_trying(self):
        nvcc, hipcc = type("T", (), {"kind": "nvcc"}), type("T", (), {"kind": "hipcc"})
        every = {str(c["test_id"]): {"ops": []} for c in self.problem.cases}
        self.assertIsNone(agent.unreplayable(nvcc, {"records": every}, self.problem))
        self.assertIn("NVIDIA", agent.unreplayable(hipcc, {"records": every}, self.problem))
        self.assertIn("CUPTI", agent.unreplayable(nvcc, {"unavailable": "no CUPTI library here"}, self.problem))
        self.assertIn("no record", agent.unreplayable(nvcc, None, self.problem))
        some = dict(every, **{"2": {"unreplayable": "the call uses cuGraphLaunch"}})
        self.assertIn("test 2: the call uses cuGraphLaunch", agent.unreplayable(nvcc, {"records": some}, self.problem))


if __name__ == "__main__":
    unittest.main()
