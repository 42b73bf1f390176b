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
   * The limits of a run before its agent is heard from, each as long as the provisioning limit, each on a clock of
   * its own: a machine (the job submitted or provisioning), the image pull (which dstack counts in neither, and
   * shows as {@code image_pull_progress}), and the first log event once dstack says the container runs (a log
   * storage that serves no logs looks like a run that never starts: fluent-bit without Elasticsearch,
   * server/services/logs/fluentbit.py:207-216).
   */
  enum Limit { PROVISIONING, PULL, NO_LOG }

  /**
   * What is known besides dstack's own report: whether the agent has printed an event (the machine is up) and
   * whether the log has had any event at all, whether the agent printed how it ended (the event is held, for
   * {@code heldFor}), whether the run was stopped on request or at which {@link Limit}, whether the fleet was
   * already checked after a missing-fleet failure; how long the submission has waited for a machine (pulls not
   * counted), how long the current pull has taken, how long dstack has said the container runs (null: never), and
   * how much of the no-capacity retry budget is left.
   */
  record Facts(boolean agentStarted, boolean logSeen, boolean terminalHeld, Duration heldFor, boolean cancelled,
               Limit limitHit, boolean fleetChecked, Duration waited, Duration pulling, Duration running,
               Duration retryLeft) {}

  sealed interface Next {}

  /** Keep polling. */
  record Poll() implements Next {}

  /** Stop the run: past one of its {@link Limit}s, or (null) the agent has ended and the container goes on. */
  record Stop(Limit limit) implements Next {}

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

  /** What the user is told when a run's log stays empty while dstack says its container runs. */
  static final String NO_LOG = "dstack says the run's container is running, but its log storage serves no log at "
      + "all, so the agent's events cannot be seen (a fluent-bit log storage without Elasticsearch ships logs and "
      + "reads none back: server/services/logs/fluentbit.py:207-216); the dstack server needs file, CloudWatch or "
      + "Elasticsearch log storage, or set DSTACK_LOG_STORAGE=none to refuse such runs at once";

  private RunDecision() {}

  /** What a run that is not final needs. */
  static Next whileRunning(Facts facts, Duration limit, Duration stopGrace) {
    if (!facts.agentStarted() && !facts.cancelled() && facts.limitHit() == null) {
      if (facts.waited().compareTo(limit) > 0) {
        return new Stop(Limit.PROVISIONING);
      }
      if (facts.pulling().compareTo(limit) > 0) {
        return new Stop(Limit.PULL);
      }
      if (!facts.logSeen() && facts.running() != null && facts.running().compareTo(limit) > 0) {
        return new Stop(Limit.NO_LOG);
      }
    }
    if (facts.terminalHeld() && facts.heldFor().compareTo(stopGrace) > 0) {
      return new Stop(null);
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
    if (facts.limitHit() == Limit.PROVISIONING) {
      return new Fail(EventType.TIME_LIMIT_EXCEEDED, "no GPU was ready within the provisioning limit; the run was "
          + "stopped");
    }
    if (facts.limitHit() == Limit.PULL) {
      return new Fail(EventType.TIME_LIMIT_EXCEEDED, "the task's image was still being pulled at the provisioning "
          + "limit; the run was stopped");
    }
    if (facts.limitHit() == Limit.NO_LOG) {
      return new Fail(EventType.ERROR, NO_LOG + "; the run was stopped");
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
    if ("log_quota_exceeded".equals(run.jobTerminationReason())) {
      // The runner kills a job whose log passes the server's hourly quota (runner/internal/runner/executor/
      // executor.go:248-256; DSTACK_SERVER_LOG_QUOTA_PER_JOB_HOUR, 50 MiB by default: server/settings.py:195-196).
      return new Fail(EventType.RUNTIME_ERROR, "dstack killed the job because its output passed the dstack server's "
          + "per-job log quota (log_quota_exceeded: " + (run.jobTerminationMessage() == null ? "hourly quota"
          : run.jobTerminationMessage()) + "); the run printed too much (the quota is the server's "
          + "DSTACK_SERVER_LOG_QUOTA_PER_JOB_HOUR, 50 MiB an hour by default)");
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
    if (!facts.logSeen() && facts.running() != null) {
      return new Fail(EventType.ERROR, NO_LOG);
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
