package dev.kernelrunner.tracker;

import dev.kernelrunner.bus.Failures;
import java.time.Duration;

/**
 * What to do when a submission's events could not be stored: a pure decision from the failure's code, how long
 * writes have been failing and how many events are held. Unavailable (the database is away): try again after a
 * pause that doubles from 100 ms to 5 s; past {@code budget} or {@code maxHeld} events, give up on the run (the
 * caller ends it, and goes on retrying so that its end is stored). Any other failure is the store refusing
 * these events for good: drop them.
 */
final class WriteRetry {
  enum Decision { STORED, RETRY, GIVE_UP, DROP }

  static final long FIRST_PAUSE_MILLIS = 100;
  static final long MAX_PAUSE_MILLIS = 5000;

  private final long budgetNanos;
  private final int maxHeld;
  private long failingSince;
  private int attempts;

  WriteRetry(Duration budget, int maxHeld) {
    this.budgetNanos = budget.toNanos();
    this.maxHeld = maxHeld;
  }

  Decision onFailure(int code, long nowNanos, int held) {
    if (code != Failures.UNAVAILABLE) {
      onSuccess();
      return Decision.DROP;
    }
    if (attempts++ == 0) {
      failingSince = nowNanos;
    }
    return nowNanos - failingSince >= budgetNanos || held > maxHeld ? Decision.GIVE_UP : Decision.RETRY;
  }

  void onSuccess() {
    attempts = 0;
  }

  /** Failed attempts in the current run of failures. */
  int attempts() {
    return attempts;
  }

  /** The pause before the next attempt. */
  long pauseMillis() {
    return Math.min(MAX_PAUSE_MILLIS, FIRST_PAUSE_MILLIS << Math.min(Math.max(attempts - 1, 0), 16));
  }
}
