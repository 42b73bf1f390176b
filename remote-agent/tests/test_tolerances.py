"""Every problem's float32 tolerance refuses what a wrong or lazy solution leaves, and passes the reference in
float32: the validator's GPU calibration (remote_agent/problem_check.py ``attacks``: float16, TF32 for matrix products
and convolutions, all-zeros, a copy of an input, the output of a neighbouring size). Needs PyTorch and a GPU (the GPU
machine); skipped elsewhere. ``KR_SLUGS=a,b``: those problems only."""
import os
import unittest

from remote_agent import catalog, problem_check

try:
    import torch
    GPU = torch.cuda.is_available()
except ImportError:  # the CI machine: no PyTorch
    torch = None
    GPU = False


@unittest.skipUnless(GPU, "needs PyTorch and a GPU")
class ToleranceTest(unittest.TestCase):
    def test_every_tolerance_refuses_the_attacks_and_passes_float32(self):
        wanted = [s for s in os.environ.get("KR_SLUGS", "").split(",") if s] or catalog.slugs()
        for slug in wanted:
            for finding in problem_check.attacks(slug, torch):
                with self.subTest(problem=slug, check=finding.check, case=finding.case):
                    self.assertTrue(finding.passed, finding.detail)
            torch.cuda.empty_cache()


if __name__ == "__main__":
    unittest.main()
