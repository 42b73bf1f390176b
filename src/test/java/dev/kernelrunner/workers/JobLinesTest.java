package dev.kernelrunner.workers;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

class JobLinesTest {

  @Test
  void newLinesAreTakenOnceAndInOrder() {
    JobLines lines = new JobLines(0);
    assertEquals(0, lines.seen(0, 3));
    lines.took(3);
    // The same batch again (its answer was lost): all seen.
    assertEquals(3, lines.seen(0, 3));
    // Overlapping: the first two were taken.
    assertEquals(2, lines.seen(1, 4));
    lines.took(2);
    assertEquals(5, lines.consumed());
  }

  @Test
  void aBatchPastAGapIsRefused() {
    JobLines lines = new JobLines(4);
    assertEquals(-1, lines.seen(5, 1));
    assertEquals(-1, lines.seen(-1, 1));
    assertEquals(0, lines.seen(4, 1));
  }

  @Test
  void afterARestartCountingGoesOnFromTheStoredPosition() {
    JobLines lines = new JobLines(7);
    assertEquals(7, lines.seen(0, 10));
    assertEquals(0, lines.seen(7, 0));
  }
}
