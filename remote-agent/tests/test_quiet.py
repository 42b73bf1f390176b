"""quiet.py: a replay whose empty event windows read long against the GPU's usual ones (another context busy on the
device) is told apart; the GPU's history of windows is kept beside its turn."""
import json
import os
import shutil
import tempfile
import unittest
from unittest import mock

from remote_agent import quiet, turn

# Figures' windows as the H100 read them (docs/evidence/replay-h100/run44-*): alone, and beside another context's work.
ALONE = {1: {"empty_window_ms": 0.001248}, 2: {"empty_window_ms": 0.001248}, 3: {"empty_window_ms": 0.001280}}
BESIDE = {1: {"empty_window_ms": 0.002400}, 2: {"empty_window_ms": 0.002432}, 3: {"empty_window_ms": 0.002400}}
LATE = {1: {"empty_window_ms": 0.001248}, 2: {"empty_window_ms": 0.001248}, 3: {"empty_window_ms": 0.002176}}


class WindowsTest(unittest.TestCase):
    def test_the_usual_window_is_the_low_end_of_those_read(self):
        self.assertIsNone(quiet.usual([]))
        self.assertIsNone(quiet.usual([None, "x", -1, 5.0]))
        self.assertEqual(0.001248, quiet.usual([0.001312, 0.001216, 0.001248, 0.002400, 0.001280]))

    def test_a_window_is_the_median_of_the_tests(self):
        self.assertEqual(0.001248, quiet.window_of(ALONE))
        self.assertIsNone(quiet.window_of({1: {"median": 0.1}}))

    def test_windows_as_one_worker_reads_them_alone_pass(self):
        # one worker's jobs on one H100: 1.216 to 1.312 us (run 44, alone)
        self.assertIsNone(quiet.long_window({1: {"empty_window_ms": 0.001312}}, 0.001216))
        self.assertIsNone(quiet.long_window(ALONE, 0.001216))

    def test_windows_beside_another_context_read_long(self):
        why = quiet.long_window(BESIDE, 0.001248)
        self.assertIn("2.432 us against its usual 1.248 us", why)
        self.assertIn("another context", why)

    def test_one_test_read_long_is_enough(self):
        # lingering-contender.cu without the end of strays: its copies began at the third test (run 46)
        self.assertIsNotNone(quiet.long_window(LATE, 0.001248))

    def test_without_a_usual_window_or_a_window_of_the_replays_nothing_can_be_told(self):
        self.assertIn("usual empty event window is not known", quiet.long_window(ALONE, None))
        for figures in ({1: {"empty_window_ms": 1.3}}, {1: {"empty_window_ms": float("nan")}}, {1: {"median": 1}},
                        dict(ALONE, x=None), {}):
            self.assertIn("no empty event window", quiet.long_window(figures, 0.00125), figures)

    def test_only_a_window_as_usual_joins_the_history(self):
        self.assertTrue(quiet.keeps(0.001312, 0.00125))
        self.assertFalse(quiet.keeps(0.001400, 0.00125), "under the limit of a long one, over that of a usual one")
        self.assertFalse(quiet.keeps(0.00125, None))


class HistoryTest(unittest.TestCase):
    def setUp(self):
        self.folder = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.folder, True)
        self.history = quiet.History(os.path.join(self.folder, "turn" + quiet.SUFFIX))

    def test_it_is_beside_the_turn_or_nowhere(self):
        with mock.patch.dict(os.environ, {turn.VARIABLE: os.path.join(self.folder, "turn")}):
            self.assertEqual(self.history.path, quiet.History.of_turn().path)
        with mock.patch.dict(os.environ, {turn.VARIABLE: ""}):
            self.assertIsNone(quiet.History.of_turn())

    def test_it_keeps_the_latest_windows(self):
        self.assertEqual([], self.history.read())
        self.history.keep(None, 0.00125)
        self.history.keep(*[0.001 + i * 1e-6 for i in range(quiet.KEPT)])
        kept = self.history.read()
        self.assertEqual(quiet.KEPT, len(kept))
        self.assertEqual(0.001 + (quiet.KEPT - 1) * 1e-6, kept[-1])
        self.assertNotIn(0.00125, kept)
        self.assertEqual(["turn" + quiet.SUFFIX], os.listdir(self.folder), "no file of its writing is left")

    def test_a_spoilt_file_is_an_empty_history(self):
        for text in ("not json", json.dumps({"a": 1}), json.dumps([0.0012, "x", True, 7])):
            with open(self.history.path, "w") as f:
                f.write(text)
            self.assertEqual([0.0012] if "0.0012" in text else [], self.history.read())

    def test_a_history_that_cannot_be_written_fails_nothing(self):
        history = quiet.History(os.path.join(self.folder, "gone", "turn" + quiet.SUFFIX))
        history.keep(0.00125)
        self.assertEqual([], history.read())


if __name__ == "__main__":
    unittest.main()
