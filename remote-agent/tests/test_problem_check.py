"""The catalog's validator (remote_agent/problem_check.py) without a GPU: what CI runs for every problem (metadata,
attribution, the known kernels present and compiling with nvcc, CUDA and HIP through the agent's header), and that
it names a problem whose kernel does not build. Its GPU part runs on the device (docs/evidence/catalog-h100/)."""
import io
import os
import shutil
import tempfile
import unittest
from contextlib import redirect_stdout
from unittest import mock

from remote_agent import catalog, compiler, problem_check

NVCC = compiler.find_nvcc()


class ProblemCheckTest(unittest.TestCase):
    @unittest.skipUnless(NVCC, "nvcc is not installed")
    def test_every_problem_passes_the_checks_that_need_no_gpu(self):
        out = io.StringIO()
        with redirect_stdout(out):
            code = problem_check.main(["--no-gpu"])
        self.assertEqual(0, code, out.getvalue()[-3000:])
        self.assertIn("%d problems" % len(catalog.slugs()), out.getvalue())
        self.assertNotIn("FAIL", out.getvalue())

    @unittest.skipUnless(NVCC, "nvcc is not installed")
    def test_a_known_kernel_that_does_not_build_is_named(self):
        kernels = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, kernels)
        for slug in ("relu", "leaky-relu"):
            for suffix in (".cu", ".hip"):
                shutil.copy(os.path.join(problem_check.KERNELS, slug + suffix), kernels)
        with open(os.path.join(kernels, "leaky-relu.hip"), "a") as f:
            f.write("\nthis is not C++;\n")
        with mock.patch.object(problem_check, "KERNELS", kernels):
            findings = problem_check.compile_all(["relu", "leaky-relu"])
        failed = {(f.problem, f.check) for f in findings if not f.passed}
        self.assertEqual({("leaky-relu", "compiles (hip)")}, failed)
        self.assertEqual(4, len(findings))

    def test_a_missing_kernel_or_notice_fails_the_problem(self):
        root = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, root)
        shutil.copytree(os.path.join(catalog.PROBLEMS_DIR, "sigmoid"), os.path.join(root, "sigmoid"))
        with mock.patch.object(problem_check, "KERNELS", root):
            findings = problem_check.metadata("sigmoid", root)
        failed = {f.check for f in findings if not f.passed}
        self.assertEqual({"attribution", "known kernels"}, failed, "no notice file, no kernels in that folder")


class JudgedTest(unittest.TestCase):
    """How attack results become findings (problem_check._judged): per case where outputs are large, over the cases
    where every output is small (a loss), and a neighbouring size always over the cases."""

    def test_an_attack_a_large_case_accepts_fails_the_problem_and_small_cases_do_not_count(self):
        results = [("float32 passes", True, True, "1 x 1", True, ""), ("float16 fails", False, True, "1 x 1", True, ""),
                   ("float32 passes", True, True, "big", False, ""), ("float16 fails", False, True, "big", False, ""),
                   ("zeros fail", False, False, "big", False, "")]
        failed = [(f.check, f.case) for f in problem_check._judged("p", results) if not f.passed]
        self.assertEqual([("float16 fails", "big")], failed)

    def test_where_every_output_is_small_an_attack_must_fail_in_some_case(self):
        once = [("float16 fails", False, True, "a", True, ""), ("float16 fails", False, False, "b", True, "")]
        never = [("zeros fail", False, True, "a", True, ""), ("zeros fail", False, True, "b", True, "")]
        strict = [("float32 passes", True, False, "a", True, ""), ("float32 passes", True, True, "b", True, "")]
        failed = [(f.check, f.case) for f in problem_check._judged("p", once + never + strict) if not f.passed]
        self.assertEqual([("float32 passes", "a"), ("zeros fail", None)], sorted(failed, key=str))

    def test_a_neighbouring_size_must_fail_in_some_case(self):
        some = [("N - 1 fails", False, True, "a", False, ""), ("N - 1 fails", False, False, "b", False, "")]
        self.assertTrue(all(f.passed for f in problem_check._judged("p", some)))
        none = [("D - 1 fails", False, True, "a", False, ""), ("D - 1 fails", False, True, "b", True, "")]
        self.assertEqual([False], [f.passed for f in problem_check._judged("p", none)])


if __name__ == "__main__":
    unittest.main()
