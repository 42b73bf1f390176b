package dev.kernelrunner.model;

import dev.kernelrunner.bus.ForSubmission;
import io.vertx.core.json.JsonObject;
import java.util.List;

/**
 * What a backend reports about a running submission on {@code submissions.progress} (passed as is, see
 * {@link dev.kernelrunner.bus.LocalCodec}): either one event the agent (or the backend) produced, or the end of
 * its process.
 */
public sealed interface Progress extends ForSubmission {

  /** An event with its fields (everything but the type), and those fields encoded as JSON. */
  record Event(String submissionId, EventType type, JsonObject fields, String payload) implements Progress {}

  /**
   * The process is gone. {@code killed}: stopped on request; {@code timedOut}: stopped at the time limit;
   * {@code terminalSeen}: the agent had already reported how it ended; {@code startError}: it never started;
   * {@code failure} (with its fields): how the backend says it failed, null when it does not say; {@code lost}:
   * why the backend lost the run (its machine went away; the submission may run again), else null.
   */
  record Exit(String submissionId, Integer exitCode, boolean killed, boolean timedOut, boolean terminalSeen,
              String startError, List<String> logTail, EventType failure, JsonObject failureFields, String lost)
      implements Progress {

    public Exit {
      logTail = List.copyOf(logTail);
    }

    public Exit(String submissionId, Integer exitCode, boolean killed, boolean timedOut, boolean terminalSeen,
                String startError, List<String> logTail) {
      this(submissionId, exitCode, killed, timedOut, terminalSeen, startError, logTail, null, null, null);
    }
  }
}
