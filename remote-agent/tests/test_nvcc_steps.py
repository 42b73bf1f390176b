"""nvcc's build split into its own steps, the host side beside the device side (remote_agent/nvcc_steps.py): the same
outcome as nvcc itself (a library exporting the same symbols; the same failure and the same words) for kernels of
each convention, a compile error, a call into a library the problem does not allow; a dry run of another shape is
left to nvcc; and a build through the agent's builder (builder.py) is the same."""
import os
import re
import shutil
import subprocess
import tempfile
import unittest
from types import SimpleNamespace

from remote_agent import builder, catalog, compiler, nvcc_steps
from remote_agent.agent import build_plan

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
# cuBLAS declared by hand (its header may not be installed): the link, not the compiler, refuses it.
CUBLAS_CALL = ('extern "C" int cublasCreate_v2(void** handle);\n'
               'extern "C" void solution(const float* A, const float* B, float* C, size_t M, size_t N, size_t K) {\n'
               '  void* handle = 0; cublasCreate_v2(&handle);\n}\n')
SYNTAX_ERROR = "__global__ void solution(const float* input, float alpha, float* output, size_t M, size_t N) { y; }\n"


def intermediate_names(text):
    """The output with nvcc's intermediate files' names taken out (its own are random, in its temporary folder; ours
    are in the build's folder): a link error names the object file it is in."""
    return re.sub(r"tmpxft_[0-9a-f]+_[0-9]+-[0-9]+_|nvcc-steps/", "", text)


def exported(library):
    done = subprocess.run(["nm", "-D", "--defined-only", library], capture_output=True, text=True)
    return sorted(line.split()[-1] for line in done.stdout.splitlines() if " T " in line)


@unittest.skipUnless(compiler.find_nvcc(), "nvcc is not installed")
class NvccStepsTest(unittest.TestCase):
    def build_both_ways(self, slug, code, language="cuda"):
        tc = compiler.Toolchain("nvcc", compiler.find_nvcc(), "local", "sm_90")
        problem = catalog.load(slug)
        sources, entry, _, _ = build_plan(code, language, problem, tc)
        argv = tc.command(language, entry, "lib.so", problem.libraries)
        outcomes = []
        made = builder.Builder.start(SimpleNamespace(preexec=lambda role, cwd, own: None, ns_fds=[]),
                                     beside_threads=True)
        self.assertIsNotNone(made)
        self.addCleanup(made.close)
        for way in ("nvcc", "steps", "builder"):
            work = tempfile.mkdtemp()
            self.addCleanup(shutil.rmtree, work, True)
            for name, text in sources.items():
                with open(os.path.join(work, name), "w") as f:
                    f.write(text)
            # nvcc's temporary files (cicc leaves an empty *.lgenfe.bc behind a failed compile) go with the test's
            # folder; the agent's go with the job's room, whose /tmp is its own.
            temp = os.path.join(work, "tmp")
            os.mkdir(temp)
            env = dict(os.environ, TMPDIR=temp)
            if way != "nvcc":
                steps = nvcc_steps.plan(argv, work, env)
                self.assertIsNotNone(steps, "this nvcc's steps are the shape nvcc_steps knows")
                code_, output = nvcc_steps.run(steps, work, 120) if way == "steps" else made.build(
                    steps, argv, work, 120, None)
            else:
                done = subprocess.run(argv, cwd=work, env=env, capture_output=True, text=True)
                code_, output = done.returncode, done.stdout + done.stderr
            library = os.path.join(work, "lib.so")
            output = output.replace(temp + os.sep, "").replace(work + os.sep, "")
            outcomes.append((code_ == 0, intermediate_names(output).strip(), exported(library) if code_ == 0 else None))
        self.assertEqual(outcomes[0], outcomes[1])
        self.assertEqual(outcomes[1], outcomes[2], "the builder's build is the same")
        return outcomes[1]

    def test_kernels_of_both_conventions_build_the_same_library(self):
        for slug, name in (("leaky-relu", "leaky-relu.cu"), ("matrix-multiplication", "matrix-multiplication.cu")):
            code = open(os.path.join(ROOT, "selftest", "kernels", name)).read()
            built, _, symbols = self.build_both_ways(slug, code)
            self.assertTrue(built)
            self.assertTrue(symbols)
        code = open(os.path.join(ROOT, "selftest", "adversarial", "python-timer-patch.cu")).read()
        self.assertTrue(self.build_both_ways("leaky-relu", code)[0], "a host function of its own")

    def test_a_compile_error_reads_as_nvccs(self):
        built, output, _ = self.build_both_ways("leaky-relu", SYNTAX_ERROR)
        self.assertFalse(built)
        self.assertIn('identifier "y" is undefined', output)

    def test_a_library_the_problem_does_not_allow_fails_at_the_link_as_with_nvcc(self):
        built, output, _ = self.build_both_ways("matrix-multiplication", CUBLAS_CALL)
        self.assertFalse(built)
        self.assertEqual("cuBLAS", compiler.unallowed_library(output)[0])

    def test_the_time_limit_holds_for_the_steps_as_for_nvcc(self):
        tc = compiler.Toolchain("nvcc", compiler.find_nvcc(), "local", "sm_90")
        work = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, work, True)
        with open(os.path.join(work, "solution.cu"), "w") as f:
            f.write(open(os.path.join(ROOT, "selftest", "adversarial", "python-timer-patch.cu")).read())
        steps = nvcc_steps.plan(tc.command("cuda", "solution.cu", "lib.so"), work)
        with self.assertRaises(subprocess.TimeoutExpired):
            nvcc_steps.run(steps, work, 0.05)

    def test_a_dry_run_of_another_shape_is_left_to_nvcc(self):
        self.assertIsNone(nvcc_steps.parse("#$ gcc -E x.cu\n#$ cicc x.ii\n"))
        self.assertIsNone(nvcc_steps.parse(""))


if __name__ == "__main__":
    unittest.main()
