package dev.kernelrunner.model;

import java.util.Optional;

/**
 * Every event a submission can go through, in lifecycle order; the last six end a submission with an error.
 * {@link #BASELINED} ends a baseline job (PyTorch's own times for its problem, BENCHMARKING and a BENCHMARK_RESULT
 * per test before it).
 * {@link #PROFILE_REPORT} is no lifecycle event: a piece of the profiler's report file, which the supervisor
 * collects and the store keeps beside the submission; it is never stored as an event nor published.
 * {@link #VERIFIED} is the one event after an end: a BENCHMARKED whose times the profiler had not yet checked
 * ({@code verification.timing.status: "pending"}) gets the cross-check's verdict in it.
 */
public enum EventType {
  IN_QUEUE(0, true),
  PROVISIONING(1, true),
  COMPILING(2, true),
  CHECKING(3, true),
  TEST_RESULT(3, false),
  CHECKED(4, true),
  BENCHMARKING(5, true),
  BENCHMARK_RESULT(5, false),
  BENCHMARKED(6, true),
  VERIFIED(6, false),
  PROFILING(5, true),
  PROFILE_RESULT(5, false),
  PROFILE_REPORT(5, false),
  PROFILED(6, true),
  BASELINED(6, true),
  COMPILE_ERROR(7, true),
  WRONG_ANSWER(7, true),
  RUNTIME_ERROR(7, true),
  TIME_LIMIT_EXCEEDED(7, true),
  ERROR(7, true),
  CANCELLED(7, true);

  private final int rank;
  private final boolean changesStatus;

  EventType(int rank, boolean changesStatus) {
    this.rank = rank;
    this.changesStatus = changesStatus;
  }

  public static Optional<EventType> parse(String name) {
    if (name == null) {
      return Optional.empty();
    }
    try {
      return Optional.of(valueOf(name));
    } catch (IllegalArgumentException e) {
      return Optional.empty();
    }
  }

  public boolean isError() {
    return rank == 7;
  }

  /** Whether this event ends a submission run in {@code mode}. */
  public boolean isTerminal(Mode mode) {
    return isError() || this == BENCHMARKED || (this == CHECKED && mode == Mode.CHECK)
        || (this == PROFILED && mode == Mode.PROFILE) || (this == BASELINED && mode == Mode.BASELINE);
  }

  /** Whether a BENCHMARKED's fields say its times are still to be cross-checked (a VERIFIED will follow). */
  public static boolean timingPending(io.vertx.core.json.JsonObject fields) {
    Object verification = fields == null ? null : fields.getValue("verification");
    Object timing = verification instanceof io.vertx.core.json.JsonObject v ? v.getValue("timing") : null;
    return timing instanceof io.vertx.core.json.JsonObject t && "pending".equals(t.getValue("status"));
  }

  /** Whether a stream of a submission ends with this event ({@code fields}: its fields): the last one it gets. */
  public boolean endsStream(io.vertx.core.json.JsonObject fields, Mode mode) {
    return this == VERIFIED || (isTerminal(mode) && !(this == BENCHMARKED && timingPending(fields)));
  }

  /** Per-test results leave the submission's status as it is. */
  public boolean changesStatus() {
    return changesStatus;
  }

  /** Events the agent may report; queueing and cancellation belong to the service. */
  public boolean fromAgent() {
    return this != IN_QUEUE && this != CANCELLED;
  }

  /**
   * Whether {@code next} may follow a submission whose status is {@code this}: never after a terminal
   * status, never backwards, and per-test results only inside their own phase.
   */
  public boolean accepts(EventType next, Mode mode) {
    if (next == VERIFIED) {
      return this == BENCHMARKED && mode == Mode.BENCHMARK; // and only while its timing is pending (the tracker)
    }
    if (isTerminal(mode)) {
      return false;
    }
    if (next.isError()) {
      return true;
    }
    if (next == TEST_RESULT) {
      return this == CHECKING;
    }
    if (next == BENCHMARK_RESULT) {
      return this == BENCHMARKING;
    }
    if (next == PROFILE_RESULT) {
      return this == PROFILING;
    }
    if (next == PROFILE_REPORT) {
      return false;
    }
    if (next == PROFILING || next == PROFILED) {
      return mode == Mode.PROFILE && next.rank >= rank;
    }
    if (next == IN_QUEUE) {
      return this == IN_QUEUE;
    }
    if (next == BENCHMARKING) {
      return (mode == Mode.BENCHMARK || mode == Mode.BASELINE) && next.rank >= rank;
    }
    if (next == BENCHMARKED) {
      return mode == Mode.BENCHMARK && next.rank >= rank;
    }
    if (next == BASELINED) {
      return mode == Mode.BASELINE && next.rank >= rank;
    }
    return next.rank >= rank;
  }
}
