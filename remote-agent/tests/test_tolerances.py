"""Every problem's float32 tolerance is tight enough that a solution computing in float16 (or, for matrix
multiplication, with TF32 tensor cores) FAILS it: the reference itself, computed that way, must not pass. Needs
PyTorch and a GPU (the GPU machine: bash scripts/gpu-selftest.sh OUT tolerances); skipped elsewhere."""
import unittest

from remote_agent import catalog

try:
    import torch
    GPU = torch.cuda.is_available()
except ImportError:  # the CI machine: no PyTorch
    torch = None
    GPU = False

MIN_ELEMENTS = 100  # a single element can happen to be exact in float16; a hundred cannot all be


def mismatches(problem, case, got, want):
    atol, rtol = problem.tolerance(case["sizes"], "float32")
    bad = 0
    for name in problem.outputs():
        diff = (got[name].double() - want[name]).abs()
        bad += int((~(diff <= atol + rtol * want[name].abs())).sum().item())
    return bad


@unittest.skipUnless(GPU, "needs PyTorch and a GPU")
class ToleranceTest(unittest.TestCase):
    def cases(self):
        for slug in catalog.slugs():
            problem = catalog.load(slug)
            if "float32" not in problem.dtypes:
                continue
            for case in problem.cases:
                gen = torch.Generator(device="cuda")
                gen.manual_seed(problem.seed(case["test_id"]))
                inputs = problem.module.make_inputs(case["sizes"], torch.float32, gen, torch)
                wide = {k: (v.double() if torch.is_tensor(v) else v) for k, v in inputs.items()}
                want = problem.module.reference(wide, torch)
                if sum(v.numel() for v in want.values()) >= MIN_ELEMENTS:
                    yield problem, case, inputs, want

    def test_the_reference_in_float16_fails_every_float32_check(self):
        for problem, case, inputs, want in self.cases():
            half = {k: (v.half() if torch.is_tensor(v) else v) for k, v in inputs.items()}
            got = problem.module.reference(half, torch)
            with self.subTest(problem=problem.slug, case=case["name"]):
                self.assertGreater(mismatches(problem, case, got, want), 0, "float16 passes the float32 check")

    def test_matrix_multiplication_with_tf32_fails_its_check(self):
        problem = catalog.load("matrix-multiplication")
        previous = torch.backends.cuda.matmul.allow_tf32
        torch.backends.cuda.matmul.allow_tf32 = True
        try:
            for p, case, inputs, want in self.cases():
                if p.slug != problem.slug:
                    continue
                got = problem.module.reference(inputs, torch)  # float32 inputs: TF32 tensor cores
                with self.subTest(case=case["name"]):
                    self.assertGreater(mismatches(problem, case, got, want), 0, "TF32 passes the float32 check")
        finally:
            torch.backends.cuda.matmul.allow_tf32 = previous

    def test_the_reference_in_float32_passes(self):
        for problem, case, inputs, want in self.cases():
            got = problem.module.reference(inputs, torch)
            with self.subTest(problem=problem.slug, case=case["name"]):
                self.assertEqual(mismatches(problem, case, got, want), 0, "the tolerance refuses float32 itself")

    def test_zeros_and_a_copy_of_an_input_fail(self):
        # What a solution that does nothing, or only copies, would leave in the outputs (KernelBench#165: all-zeros
        # passed 4 of 60 level-1 problems there).
        for problem, case, inputs, want in self.cases():
            with self.subTest(problem=problem.slug, case=case["name"], attack="zeros"):
                zeros = {name: torch.zeros_like(want[name]) for name in problem.outputs()}
                self.assertGreater(mismatches(problem, case, zeros, want), 0, "all-zeros passes")
            for name, value in inputs.items():
                if torch.is_tensor(value) and all(value.shape == want[o].shape for o in problem.outputs()):
                    with self.subTest(problem=problem.slug, case=case["name"], attack="copy of " + name):
                        copy = {o: value.clone() for o in problem.outputs()}
                        self.assertGreater(mismatches(problem, case, copy, want), 0, "a copy of the input passes")


if __name__ == "__main__":
    unittest.main()
