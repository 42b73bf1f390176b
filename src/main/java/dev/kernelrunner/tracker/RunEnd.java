package dev.kernelrunner.tracker;

import dev.kernelrunner.model.EventType;
import dev.kernelrunner.model.Progress;
import io.vertx.core.json.JsonObject;

/**
 * How the end of a submission's run ends the submission: the one place that decides it, a pure function of what
 * the tracker knows of the submission ({@link State}) and how the run ended ({@link Progress.Exit}), in the house
 * style of {@code dstack.RunDecision}. The tracker performs the decision.
 */
final class RunEnd {
  private RunEnd() {}

  /**
   * What the tracker knows of the submission when its run ends: whether it has ended already (its agent said so),
   * whether a timing verdict is still to come, who asked to cancel it and why, and how often it was put back in line.
   */
  record State(boolean terminal, boolean timingPending, String cancelledBy, String cancelReason, int restarts,
               EventType status) {}

  /** What to do. */
  sealed interface Decision {}

  /** The run's machine went away before the submission ended: back to the head of its queue, once. */
  record Requeue(String why) implements Decision {}

  /**
   * The submission ends now with {@code type} and {@code fields}; a CANCELLED says who cancelled it and why
   * ({@code cancelledBy}, {@code cancelReason}; null otherwise).
   */
  record End(EventType type, JsonObject fields, String cancelledBy, String cancelReason) implements Decision {}

  /**
   * It had ended already; {@code verdictLost}: its result was published with its timing verdict to come, and the
   * run ended without it (the verdict is recorded as never checked).
   */
  record Ended(boolean verdictLost) implements Decision {}

  static Decision decide(State state, Progress.Exit exit, long limitSeconds) {
    if (state.terminal()) {
      return new Ended(state.timingPending());
    }
    if (exit.lost() != null && state.cancelledBy() == null && !exit.timedOut() && state.restarts() == 0) {
      return new Requeue(exit.lost());
    }
    String tail = String.join("\n", exit.logTail());
    if (state.cancelledBy() != null) {
      return cancelled(state.cancelledBy(), state.cancelReason());
    }
    if (exit.timedOut()) {
      return end(EventType.TIME_LIMIT_EXCEEDED, new JsonObject().put("phase", state.status().name().toLowerCase())
          .put("limit_seconds", limitSeconds)
          .put("message", "the submission ran past its time limit of " + limitSeconds + " s").put("details", tail));
    }
    if (exit.failure() != null) {
      JsonObject fields = exit.failureFields() == null ? new JsonObject() : exit.failureFields().copy();
      if (!fields.containsKey("details")) {
        fields.put("details", tail);
      }
      return end(exit.failure().isError() ? exit.failure() : EventType.ERROR, fields);
    }
    if (exit.startError() != null) {
      return end(EventType.ERROR, new JsonObject().put("message", "the agent could not be started")
          .put("details", exit.startError()));
    }
    if (exit.killed()) {
      return cancelled("system", "killed");
    }
    if (exit.exitCode() != null && exit.exitCode() != 0) {
      return end(EventType.RUNTIME_ERROR, new JsonObject()
          .put("message", "the agent exited with code " + exit.exitCode() + " before reporting a result")
          .put("exit_code", exit.exitCode()).put("details", tail));
    }
    return end(EventType.ERROR, new JsonObject().put("message", "the agent exited without reporting a result")
        .put("exit_code", exit.exitCode()).put("details", tail));
  }

  /** The fields of a CANCELLED. */
  static JsonObject cancelFields(String cancelledBy, String reason) {
    return new JsonObject().put("cancelled_by", cancelledBy).put("reason", reason)
        .put("message", "cancelled by " + cancelledBy + " (" + reason + ")");
  }

  private static End cancelled(String by, String reason) {
    return new End(EventType.CANCELLED, cancelFields(by, reason), by, reason);
  }

  private static End end(EventType type, JsonObject fields) {
    return new End(type, fields, null, null);
  }
}
