"""Profile mode's parsing, on Nsight Compute's own output from the H100 (docs/evidence/probes/ncu-h100/,
docs/evidence/profile-h100/) and rocprofv3's documented CSV columns."""
import base64
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import unittest

from remote_agent import profiler

HERE = os.path.dirname(os.path.abspath(__file__))
NCU = os.path.join(HERE, "..", "..", "docs", "evidence", "probes", "ncu-h100")  # evidence stays out of the agent


def read(*parts):
    with open(os.path.join(*parts), encoding="utf-8") as f:
        return f.read()


class NcuTest(unittest.TestCase):
    def test_command_keeps_only_the_test_ranges_and_the_three_sections(self):
        argv = profiler.ncu_command("ncu", "/w/profile", "/w/ncu.log", ["python3", "-m", "remote_agent.worker", "j"])
        self.assertEqual(argv[argv.index("--nvtx-include") + 1], "regex:kr-test-.*/")
        self.assertEqual([argv[i + 1] for i, a in enumerate(argv) if a == "--section"],
                         ["SpeedOfLight", "Occupancy", "LaunchStats"])
        self.assertIn("gpu__time_duration.sum", argv[argv.index("--metrics") + 1])
        self.assertEqual(argv[-4:], ["python3", "-m", "remote_agent.worker", "j"])

    def test_hints_prefer_the_speed_of_light_bottleneck_rule(self):
        hints = profiler.parse_ncu_hints(read(NCU, "details.csv"))
        self.assertEqual(sorted(hints), [0, 1])
        self.assertEqual(hints[0]["rule"], "SOLBottleneck")
        self.assertTrue(hints[0]["advice"].startswith("This workload exhibits low compute throughput"))

    def test_raw_page_rows_become_kernels_of_their_test(self):
        raw = read(NCU, "raw.csv")
        kernels = profiler.parse_ncu_raw(raw)
        # The probe named its ranges kr-test-<M>x<N>: the id is the number after the prefix.
        self.assertEqual([k["test_id"] for k in kernels], [1000, 8192])
        first = kernels[0]
        self.assertGreater(first["duration_ns"], 0)
        self.assertEqual(first["block_size"], 256)
        self.assertEqual(first["registers_per_thread"], 16)
        for name in profiler.NCU_METRICS.values():
            self.assertIsNotNone(first[name], name)

    def test_tests_carry_milliseconds_gigabytes_and_the_hint(self):
        tests = profiler.ncu_tests(read(NCU, "raw.csv"), read(NCU, "details-agent.csv"))
        small, large = tests[1000][0], tests[8192][0]
        self.assertAlmostEqual(small["duration_ms"], 0.005408)
        self.assertGreater(large["dram_gbs"], 2000)  # 8192^2 floats in and out in 0.23 ms
        self.assertGreater(large["dram_pct_of_peak"], 50)
        self.assertEqual(large["hint_rule"], "SOLBottleneck")
        self.assertIn("Memory is more heavily utilized than Compute", large["hint"])

    def test_a_user_barred_from_the_counters_is_the_operators_error(self):
        log = ("==PROF== Connected to process 1\n==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to "
               "access NVIDIA GPU Performance Counters on the target device 0.\n")
        self.assertIn("NVreg_RestrictProfilingToAdminUsers=0", profiler.tool_refusal(log))
        self.assertIsNone(profiler.tool_refusal("==ERROR== The application returned an error code (1).\n"))

    def test_the_verify_run_prints_what_an_import_would_read(self):
        # ncu_live_csv.py on the H100: the same two tests, the same kernels, read from the profiled run's own log.
        with open(os.path.join(NCU, "verify-live.txt")) as f:
            live = profiler.read_verify_text(f.read())
        with open(os.path.join(NCU, "verify-imported.csv")) as f:
            imported = profiler.ncu_tests(f.read(), "")
        self.assertEqual(sorted(live), [1, 2])
        self.assertEqual({t: [k["kernel"] for k in ks] for t, ks in live.items()},
                         {t: [k["kernel"] for k in ks] for t, ks in imported.items()})
        self.assertTrue(all(0.004 < k["duration_ms"] < 0.006 for ks in live.values() for k in ks))
        self.assertEqual(profiler.read_verify_text("==ERROR== no kernels\n"), {})

    def test_nothing_parses_from_an_error(self):
        self.assertEqual(profiler.parse_ncu_raw("==ERROR== the profiling permissions are missing\n"), [])
        self.assertEqual(profiler.parse_ncu_hints(""), {})


class OutputTest(unittest.TestCase):
    """The profiler's figures reach the agent on a pipe of the agent's; the worker under the profiler speaks on
    another, and keeps no copy of the first once it runs (worker.confine_self)."""

    PROFILER = textwrap.dedent('''
        import os, subprocess, sys
        print("==PROF== Connected", flush=True)
        os.dup2(1, 40)  # a copy of its output that the profiler lets its target inherit
        # The profiled worker, as ncu starts it: every descriptor the profiler has, its stdout among them.
        probe = ("import os, sys; from remote_agent import worker; worker._redirect_stdout(); worker.confine_self(); "
                 "links = [os.readlink('/proc/self/fd/' + n) for n in os.listdir('/proc/self/fd') "
                 "if os.path.exists('/proc/self/fd/' + n)]; "
                 "worker.send('CALLED', test_id=1, links=links)")
        subprocess.run([sys.executable, "-c", probe], close_fds=False)
        print('"ID","Kernel Name"', flush=True)
    ''')

    def test_the_figures_come_on_the_agents_pipe_and_the_worker_keeps_none_of_it(self):
        output = profiler.Output()
        env = output.environment(dict(os.environ, PYTHONPATH=os.path.dirname(HERE)))
        process = subprocess.Popen([sys.executable, "-c", self.PROFILER], env=env, stdout=output.write_fd,
                                   stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
                                   pass_fds=(output.protocol_write,))
        output.started(process)
        spoken = json.loads(process.stdout.readline())
        process.wait(timeout=30)
        text = output.text()
        output.close()
        process.stdout.close()
        process.stderr.close()
        self.assertEqual("CALLED", spoken["event"], "the worker's own channel")
        self.assertNotIn("pipe:[%d]" % output.inode, spoken["links"], "no copy of the profiler's output kept")
        self.assertIn("==PROF== Connected", text)
        self.assertIn('"ID","Kernel Name"', text)
        self.assertNotIn("CALLED", text, "nothing of the worker's on the profiler's output")


class RocprofTest(unittest.TestCase):
    # Columns as rocprofiler-sdk's docs show them (how-to/using-rocprofv3.rst, "Kernel trace" and "Marker trace").
    KERNELS = ('"Kind","Agent_Id","Queue_Id","Stream_Id","Thread_Id","Dispatch_Id","Kernel_Id","Kernel_Name",'
               '"Correlation_Id","Start_Timestamp","End_Timestamp","LDS_Block_Size","Scratch_Size","VGPR_Count",'
               '"Accum_VGPR_Count","SGPR_Count","Workgroup_Size_X","Workgroup_Size_Y","Workgroup_Size_Z",'
               '"Grid_Size_X","Grid_Size_Y","Grid_Size_Z"\n'
               '"KERNEL_DISPATCH","Agent 4",1,1,9,1,10,"fill",1,100,200,0,0,8,0,16,256,1,1,1024,1,1\n'
               '"KERNEL_DISPATCH","Agent 4",1,1,9,2,11,"lrelu",2,1000,3500,512,0,24,0,16,256,1,1,4096,1,1\n'
               '"KERNEL_DISPATCH","Agent 4",1,1,9,3,11,"lrelu",3,5000,9000,512,0,24,0,16,256,1,1,8192,1,1\n')
    MARKERS = ('"Domain","Function","Process_Id","Thread_Id","Correlation_Id","Start_Timestamp","End_Timestamp"\n'
               '"MARKER_CORE_API","kr-test-1",9,9,5,900,4000\n'
               '"MARKER_CORE_API","kr-test-2",9,9,6,4500,9500\n')

    def test_kernels_go_to_the_range_they_ran_in(self):
        with tempfile.TemporaryDirectory() as out:
            host = os.path.join(out, "host", "9")
            os.makedirs(host)
            with open(os.path.join(host, "profile_kernel_trace.csv"), "w") as f:
                f.write(self.KERNELS)
            with open(os.path.join(host, "profile_marker_api_trace.csv"), "w") as f:
                f.write(self.MARKERS)
            tests = profiler.parse_rocprof(out)
        self.assertEqual(sorted(tests), [1, 2])  # the fill kernel before any range belongs to no test
        kernel = tests[1][0]
        self.assertEqual(kernel["kernel"], "lrelu")
        self.assertAlmostEqual(kernel["duration_ms"], 0.0025)
        self.assertEqual(kernel["grid_size"], 16)
        self.assertEqual(kernel["registers_per_thread"], 24)
        self.assertIsNone(kernel["dram_gbs"])


class ReportTest(unittest.TestCase):
    def test_pieces_rebuild_the_file_and_name_its_hash(self):
        data = os.urandom(profiler.REPORT_PIECE_BYTES * 2 + 17)
        with tempfile.TemporaryDirectory() as out:
            path = os.path.join(out, "profile.ncu-rep")
            with open(path, "wb") as f:
                f.write(data)
            pieces = profiler.report_pieces(path)
        self.assertEqual([p["part"] for p in pieces], [1, 2, 3])
        self.assertTrue(all(p["parts"] == 3 and p["name"] == "profile.ncu-rep" for p in pieces))
        self.assertEqual(b"".join(base64.b64decode(p["data"]) for p in pieces), data)
        self.assertEqual(pieces[0]["sha256"], hashlib.sha256(data).hexdigest())
        self.assertTrue(all(len(p["data"]) < 300 * 1024 for p in pieces))  # well inside a 1 MiB event line

    def test_a_missing_report_has_no_pieces(self):
        self.assertEqual(profiler.report_pieces("/nonexistent/profile.ncu-rep"), [])
        self.assertIsNone(profiler.report_size("/nonexistent/profile.ncu-rep"))

    def test_a_report_over_the_payloads_limit_is_not_sent_but_its_size_is_known(self):
        with tempfile.TemporaryDirectory() as out:
            path = os.path.join(out, "profile.ncu-rep")
            with open(path, "wb") as f:
                f.write(b"r" * 1000)
            self.assertEqual([], profiler.report_pieces(path, 999))
            self.assertEqual(1, len(profiler.report_pieces(path, 1000)))
            self.assertEqual(1000, profiler.report_size(path))


if __name__ == "__main__":
    unittest.main()
