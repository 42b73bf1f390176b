package dev.kernelrunner.leaderboard;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

class BoardTest {

  /** 21 samples spread evenly over median x (1 -+ spread). */
  private static List<Double> samples(double median, double spread) {
    return IntStream.range(0, 21).mapToObj(k -> median * (1 + spread * (k - 10) / 10.0)).toList();
  }

  private static Board.Candidate candidate(String user, double runtime, double spread) {
    return new Board.Candidate("id-" + user, user, "2026-11-24T00:00:00Z", 2.0, List.of(
        new Board.Test("1", runtime, samples(runtime, spread)),
        new Board.Test("2", 2 * runtime, samples(2 * runtime, spread))));
  }

  @Test
  void theMediansIntervalComesFromOrderStatistics() {
    // n = 21: ranks 6 and 16 (10.5 -+ 1.96 x sqrt(21) / 2, the upper one past the middle pair)
    Board.Interval interval = Board.medianInterval(samples(1.0, 0.1));
    assertEquals(0.95, interval.lowMs(), 1e-12);
    assertEquals(1.05, interval.highMs(), 1e-12);
    // Fewer than 6 samples: the whole range.
    Board.Interval few = Board.medianInterval(List.of(3.0, 1.0, 2.0, 5.0, 4.0));
    assertEquals(1.0, few.lowMs());
    assertEquals(5.0, few.highMs());
    assertNull(Board.medianInterval(List.of()));
    assertNull(Board.medianInterval(null));
  }

  @Test
  void overlappingIntervalsShareARankAndAreMarkedATie() {
    List<Board.Entry> entries = Board.rank(List.of(
        candidate("cat", 0.60, 0.01), candidate("ann", 0.500, 0.01), candidate("bob", 0.502, 0.01),
        candidate("dan", 0.70, 0.01), candidate("eve", 0.7005, 0.01)));
    assertEquals(List.of("ann", "bob", "cat", "dan", "eve"),
        entries.stream().map(e -> e.candidate().userId()).toList());
    assertEquals(List.of(1, 1, 3, 4, 4), entries.stream().map(Board.Entry::rank).toList());
    assertEquals(List.of(true, true, false, true, true), entries.stream().map(Board.Entry::tie).toList());
    Board.Entry ann = entries.get(0);
    assertEquals(0.5 * Math.sqrt(2), ann.geomeanMs(), 1e-12);
    assertEquals(0.5 * Math.sqrt(2) * 0.995, ann.interval().lowMs(), 1e-12);
    assertEquals(0.5 * Math.sqrt(2) * 1.005, ann.interval().highMs(), 1e-12);
  }

  @Test
  void aWinClearOfTheNoiseIsNoTie() {
    List<Board.Entry> entries = Board.rank(List.of(candidate("ann", 0.5, 0.001), candidate("bob", 0.502, 0.001)));
    assertEquals(List.of(1, 2), entries.stream().map(Board.Entry::rank).toList());
    assertFalse(entries.get(0).tie());
    assertFalse(entries.get(1).tie());
  }

  @Test
  void aResultWhoseSamplesDoNotGiveItsFiguresIsLeftOut() {
    Board.Candidate forged = new Board.Candidate("id-x", "mal", "t", 9.0, List.of(
        new Board.Test("1", 0.1, samples(0.5, 0.01))));   // the published figure is not its samples' median
    Board.Candidate unsampled = new Board.Candidate("id-y", "old", "t", 1.0, List.of(
        new Board.Test("1", 0.5, null)));
    Board.Candidate noTests = new Board.Candidate("id-z", "nil", "t", 1.0, List.of());
    Board.Candidate nan = new Board.Candidate("id-w", "nan", "t", 1.0, List.of(
        new Board.Test("1", Double.NaN, samples(0.5, 0.01))));
    List<Board.Candidate> all = new ArrayList<>(List.of(forged, unsampled, noTests, nan, candidate("ann", 0.5, 0.01)));
    List<Board.Entry> entries = Board.rank(all);
    assertEquals(1, entries.size());
    assertEquals("ann", entries.get(0).candidate().userId());
    assertTrue(entries.get(0).rank() == 1 && !entries.get(0).tie());
  }
}
