package dev.kernelrunner.workers;

/**
 * Which lines of a worker's batch are new. The worker numbers a job's lines from 0 and may send a batch again
 * (its answer was lost) or after a gap (an earlier batch was lost): lines already taken are skipped, a batch
 * that starts past them is refused with where to start. So every line is handed over once, in order.
 */
final class JobLines {
  private int consumed;

  JobLines(int consumed) {
    this.consumed = consumed;
  }

  /** How many lines at the batch's head were taken before; -1 when it starts past the lines taken (a gap). */
  int seen(int from, int count) {
    if (from < 0 || from > consumed) {
      return -1;
    }
    return Math.min(count, consumed - from);
  }

  void took(int count) {
    consumed += count;
  }

  int consumed() {
    return consumed;
  }
}
