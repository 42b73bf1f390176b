package dev.kernelrunner.dstack;

import dev.kernelrunner.model.EventType;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Set;

/**
 * What to do about a dstack run, decided from what is known of it: pure, so every path is unit-tested without
 * a server. {@link DstackBackend} carries the decisions out.
 */
final class RunDecision {
  /** Where one submission's run stands. */
  enum State {
    /** Archives uploaded and {@code runs/apply} sent for the current attempt. */
    SUBMITTING,
    /** Between attempts (no capacity, or the fleet was just made). */
    WAITING_RETRY,
    /** Polled for its state and log. */
    FOLLOWING,
    /** Stop sent (cancel, a time limit, or after the agent's end); polled until dstack says it is final. */
    STOPPING,
    DONE
  }

  /**
   * What is known besides dstack's own report: whether the agent has printed an event (the machine is up), whether
   * it printed how it ended (the event is held, for {@code heldFor}), whether the run was stopped on request or
   * because provisioning took too long, whether the fleet was already checked after a missing-fleet failure, how
   * long the submission has waited for a machine, and how much of the no-capacity retry budget is left.
   */
  record Facts(boolean agentStarted, boolean terminalHeld, Duration heldFor, boolean cancelled,
               boolean provisioningTimedOut, boolean fleetChecked, Duration waited, Duration retryLeft) {}

  sealed interface Next {}

  /** Keep polling. */
  record Poll() implements Next {}

  /** Stop the run: no machine within the provisioning limit, or the agent has ended and the container goes on. */
  record Stop(boolean provisioningTimedOut) implements Next {}

  /** Hand over the held terminal event (with what the run cost), then the exit code. */
  record Deliver(Integer exitCode) implements Next {}

  /** The run is over with nothing to report: cancelled, or the agent's exit code without a terminal event. */
  record Exit(Integer exitCode) implements Next {}

  /** The fleet may be missing: check it (make it if so), then a new attempt. */
  record CheckFleetAndRetry(String message) implements Next {}

  /** No capacity: a new attempt after the backoff. */
  record Retry(String message) implements Next {}

  /** The submission ends with this error event. */
  record Fail(EventType type, String message) implements Next {}

  /** job termination reasons that mean "no machine" (core/models/runs.py:138-146). */
  private static final Set<String> NO_CAPACITY_REASONS = Set.of("failed_to_start_due_to_no_capacity",
      "interrupted_by_no_capacity", "waiting_instance_limit_exceeded");
  /** Job status messages for no capacity (services/jobs/__init__.py:611-618; "no offers" before 0.21.1). */
  private static final Set<String> NO_CAPACITY_MESSAGES = Set.of("no capacity", "no offers");

  private RunDecision() {}

  /** What a run that is not final needs. */
  static Next whileRunning(Facts facts, Duration provisioningLimit, Duration stopGrace) {
    if (!facts.agentStarted() && !facts.cancelled() && !facts.provisioningTimedOut()
        && facts.waited().compareTo(provisioningLimit) > 0) {
      return new Stop(true);
    }
    if (facts.terminalHeld() && facts.heldFor().compareTo(stopGrace) > 0) {
      return new Stop(false);
    }
    return new Poll();
  }

  /** What a final run means. */
  static Next whenFinal(RunSnapshot run, Facts facts) {
    if (facts.terminalHeld()) {
      return new Deliver(run.exitStatus());
    }
    if (facts.cancelled()) {
      return new Exit(null);
    }
    if (facts.provisioningTimedOut()) {
      return new Fail(EventType.TIME_LIMIT_EXCEEDED, "no GPU was ready within the provisioning limit; the run was "
          + "stopped");
    }
    if (!facts.agentStarted() && missingFleet(run) && !facts.fleetChecked()) {
      return new CheckFleetAndRetry("dstack could not use the fleet (" + describe(run)
          + "); checking the fleet and trying again");
    }
    if (!facts.agentStarted() && (noCapacity(run) || missingFleet(run))) {
      return facts.retryLeft().isNegative() || facts.retryLeft().isZero()
          ? new Fail(EventType.ERROR, "no capacity on dstack: " + describe(run))
          : new Retry("no capacity on dstack (" + describe(run) + ")");
    }
    Integer exit = run.exitStatus();
    if ((exit != null && exit != 0) || "container_exited_with_error".equals(run.jobTerminationReason())) {
      // The runner reports Go's ExitCode(), which is -1 for a process a signal ended
      // (runner/internal/runner/executor/executor.go:263): not a code the agent chose.
      return new Fail(EventType.RUNTIME_ERROR, (exit != null && exit == -1
          ? "the container's process was killed by a signal (dstack reports exit status -1)"
          : "the container exited with code " + exit) + " before the agent reported a result");
    }
    if ("max_duration_exceeded".equals(run.jobTerminationReason())) {
      return new Fail(EventType.TIME_LIMIT_EXCEEDED, "dstack stopped the run at the task's max_duration");
    }
    if ("done".equals(run.status())) {
      return new Exit(exit == null ? 0 : exit);
    }
    return new Fail(EventType.ERROR, "dstack ended the run: " + describe(run));
  }

  /**
   * "Failed to use specified fleets" (what a task with {@code fleets:} gets when its fleet is missing or unusable,
   * jobs_submitted.py:1024-1031) or "No matching fleet found" (:1034-1041, the only one with status message
   * {@code no fleets}, services/jobs/__init__.py:613-617).
   */
  static boolean missingFleet(RunSnapshot run) {
    String message = lower(run.jobTerminationMessage());
    return "no fleets".equals(run.jobStatusMessage()) || message.contains("failed to use specified fleets")
        || message.contains("no matching fleet found");
  }

  /** No capacity, "Fleet is at capacity" included (jobs_submitted.py:663-668 ends the job as no capacity). */
  static boolean noCapacity(RunSnapshot run) {
    return NO_CAPACITY_REASONS.contains(run.jobTerminationReason())
        || NO_CAPACITY_MESSAGES.contains(run.jobStatusMessage());
  }

  /** dstack's own words for how the run ended, each once. */
  static String describe(RunSnapshot run) {
    List<String> parts = new ArrayList<>();
    for (String part : new String[] {run.jobStatusMessage(), run.jobTerminationReason(), run.jobTerminationMessage(),
        run.terminationReason()}) {
      if (part != null && !part.isBlank() && !parts.contains(part)) {
        parts.add(part);
      }
    }
    return parts.isEmpty() ? String.valueOf(run.status()) : String.join("; ", parts);
  }

  private static String lower(String text) {
    return text == null ? "" : text.toLowerCase(Locale.ROOT);
  }
}
