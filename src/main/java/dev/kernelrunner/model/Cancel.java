package dev.kernelrunner.model;

import dev.kernelrunner.bus.ForSubmission;

/**
 * Bus body of {@code tracker.cancel}: cancel {@code submissionId}, asked by {@code cancelledBy} for {@code reason}.
 * The tracker decides, and answers once it is done: a queued submission is cancelled at once, a running one once
 * its run is gone.
 */
public record Cancel(String submissionId, String cancelledBy, String reason) implements ForSubmission {

  /** What a cancel did, and the submission's {@code status} after it. */
  public record Outcome(Kind kind, String status) {}

  /**
   * TAKEN: it was live and is ended now (CANCELLED, unless its agent ended it first: the status says); FINISHED: it
   * had ended already; NOT_ACTIVE: the tracker does not follow it (the status is the stored one).
   */
  public enum Kind { TAKEN, FINISHED, NOT_ACTIVE }
}
