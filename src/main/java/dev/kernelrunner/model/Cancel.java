package dev.kernelrunner.model;

import dev.kernelrunner.bus.ForSubmission;

/**
 * Bus body of {@code tracker.cancel}: cancel {@code submissionId}, asked by {@code cancelledBy} for {@code reason}.
 * The tracker decides; the reply says what that meant ({@link Outcome}).
 */
public record Cancel(String submissionId, String cancelledBy, String reason) implements ForSubmission {

  /** What a cancel did: the submission's {@code status} after it (null when the tracker does not follow it). */
  public record Outcome(Kind kind, String status) {}

  /**
   * RUNNING: marked; its run is to be stopped (it ends CANCELLED when it is gone). CANCELLED: it was queued and has
   * ended. FINISHED: it had ended already. NOT_ACTIVE: the tracker does not follow it (the store has its status).
   */
  public enum Kind { RUNNING, CANCELLED, FINISHED, NOT_ACTIVE }
}
