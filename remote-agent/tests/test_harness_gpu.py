"""The judge's checks on a GPU (remote_agent/worker.py Harness): ``passes`` (one device sync, a timed sample's check)
agrees with ``verify`` on right answers, a wrong value, a NaN, a changed input and an unwritten output, for float
and integer (argmax's int64) outputs, on sets made per sample and on sets made ahead (judge.Ahead), which hold what
``refill`` makes from the same seed. Needs PyTorch and a GPU; skipped elsewhere."""
import unittest

from remote_agent import catalog

try:
    import torch
    GPU = torch.cuda.is_available()
except ImportError:
    torch = None
    GPU = False


@unittest.skipUnless(GPU, "needs PyTorch and a GPU")
class HarnessGpuTest(unittest.TestCase):
    def cases(self):
        from remote_agent import worker
        for slug in ("leaky-relu", "matrix-multiplication", "argmax-over-dim", "softmax"):
            harness = worker.Harness({"problem": slug, "dtype": "float32"}, torch)
            for case in harness.problem.cases[1:3]:
                yield slug, harness, case

    def answered(self, harness, case):
        """An input set whose outputs hold the reference's answer."""
        data = harness.input_set(case)
        self.answer(harness, data)
        return data

    def made_ahead(self, harness, case):
        """An input set refilled from a set made ahead for its sample 3 (judge.Ahead), its outputs the answer."""
        from remote_agent import judge
        ahead = judge.Ahead.start(harness.job, torch)
        data = harness.input_set(case, judge.seed_for(ahead.secret, case["test_id"]))
        harness.refill_from(data, ahead.make(case, 3))
        self.answer(harness, data)
        return data

    def answer(self, harness, data):
        wide = {k: (v.double() if torch.is_tensor(v) else v) for k, v in data.copies.items()}
        wide.update({k: v for k, v in data.inputs.items() if not torch.is_tensor(v)})
        for name, value in harness.problem.module.reference(wide, torch).items():
            data.outputs[name].copy_(value.to(data.outputs[name].dtype).reshape(data.outputs[name].shape))
        torch.cuda.synchronize()

    def test_a_set_made_ahead_is_the_one_refill_makes_from_its_seed(self):
        from remote_agent import judge
        for slug, harness, case in self.cases():
            with self.subTest(problem=slug, case=case["name"]):
                ahead = judge.Ahead.start(harness.job, torch)
                ready = ahead.make(case, 5)
                data = harness.input_set(case, judge.seed_for(ahead.secret, case["test_id"]))
                harness.refill(case, data, judge.sample_seed(ahead.secret, case["test_id"], 5))
                self.assertEqual(ready.seed, data.seed)
                for name, tensor in ready.inputs.items():
                    self.assertTrue(torch.equal(tensor, data.inputs[name]), name)
                with harness.expected(data) as expected:
                    for name, answer in ready.answers.items():
                        self.assertTrue(torch.equal(answer.want, expected[name].reshape(-1)), name)
                kept = {name: tensor.clone() for name, tensor in ready.inputs.items()}
                harness.refill_from(data, ready)
                harness.refill(case, data, 7)
                for name, tensor in ready.inputs.items():
                    self.assertTrue(torch.equal(kept[name], tensor), "a refill after it leaves the set as made")
                self.assertIsNone(data.answers)

    def test_passes_and_verify_agree(self):
        for slug, harness, case in self.cases():
            output = harness.problem.outputs()[0]
            for way, answered in (("made per sample", self.answered), ("made ahead", self.made_ahead)):
                with self.subTest(problem=slug, case=case["name"], way=way, answer="unwritten"):
                    data = answered(harness, case)
                    harness.poison(data.outputs)
                    self.assertFalse(harness.passes(case, data))
                    self.assertIsNotNone(harness.verify(case, data))
                with self.subTest(problem=slug, case=case["name"], way=way, answer="right"):
                    data = answered(harness, case)
                    self.assertTrue(harness.passes(case, data))
                    self.assertIsNone(harness.verify(case, data))
                with self.subTest(problem=slug, case=case["name"], way=way, answer="one value off"):
                    data = answered(harness, case)
                    flat = data.outputs[output].view(-1)
                    flat[flat.numel() // 2] += 1 if not flat.is_floating_point() else 0.5 + flat[
                        flat.numel() // 2].abs()
                    self.assertFalse(harness.passes(case, data))
                    self.assertEqual(1, harness.verify(case, data)["mismatches"])
                if data.outputs[output].is_floating_point():
                    with self.subTest(problem=slug, case=case["name"], way=way, answer="a NaN"):
                        data = answered(harness, case)
                        data.outputs[output].view(-1)[0] = float("nan")
                        self.assertFalse(harness.passes(case, data))
                        self.assertIsNotNone(harness.verify(case, data))
                with self.subTest(problem=slug, case=case["name"], way=way, answer="an input changed"):
                    data = answered(harness, case)
                    name = next(iter(data.copies))
                    data.inputs[name].view(-1)[0] += 1
                    self.assertFalse(harness.passes(case, data))
                    self.assertEqual(name, harness.verify(case, data)["modified_input"])

if __name__ == "__main__":
    unittest.main()
