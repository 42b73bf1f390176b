package dev.kernelrunner.model;

import dev.kernelrunner.bus.ForSubmission;
import io.vertx.core.json.JsonObject;
import java.util.List;

/**
 * What a backend reports about a running submission on {@code submissions.progress} (passed as is, see
 * {@link dev.kernelrunner.bus.LocalCodec}): either one event the agent (or the backend) produced, or the end of
 * its run.
 */
public sealed interface Progress extends ForSubmission {

  /** An event with its fields (everything but the type), and those fields encoded as JSON. */
  record Event(String submissionId, EventType type, JsonObject fields, String payload) implements Progress {}

  /** The run is over and its processes are gone: how ({@code outcome}) and the last lines of its log. */
  record Exit(String submissionId, Outcome outcome, List<String> logTail) implements Progress {

    public Exit {
      logTail = List.copyOf(logTail);
    }
  }

  /**
   * How a run ended, as the process supervisor saw it. Whether that ends the submission, and how, is the tracker's
   * decision ({@code tracker.Lifecycle}): a run whose agent had already reported the end changes nothing.
   */
  sealed interface Outcome {}

  /** The agent's process exited by itself; {@code exitCode} is null when the backend does not know it. */
  record Exited(Integer exitCode) implements Outcome {}

  /** The backend knows why the run failed: {@code type} (an error event) with its {@code fields}. */
  record Failed(EventType type, JsonObject fields) implements Outcome {}

  /** The machine running it went away for good (a worker that did not come back); it may run again. */
  record Lost(String why) implements Outcome {}

  /** Stopped on request (a cancel, or the service ending a submission it could not store). */
  record Killed() implements Outcome {}

  /** Stopped at the submission's time limit. */
  record TimedOut() implements Outcome {}

  /** It never started: {@code error} says why. */
  record NotStarted(String error) implements Outcome {}
}
