package dev.kernelrunner.model;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.util.List;

/**
 * What a backend reports about a running submission on {@code submissions.progress}: either one event the
 * agent (or the backend) produced, or the end of its process.
 */
public sealed interface Progress {

  String submissionId();

  JsonObject toJson();

  /** An event with its fields (everything but the type). */
  record Event(String submissionId, EventType type, JsonObject fields) implements Progress {
    public JsonObject toJson() {
      return new JsonObject().put("kind", "event").put("submission_id", submissionId)
          .put("type", type.name()).put("fields", fields);
    }
  }

  /**
   * The process is gone. {@code killed}: stopped on request; {@code timedOut}: stopped at the time limit;
   * {@code terminalSeen}: the agent had already reported how it ended; {@code startError}: it never started;
   * {@code failure} (with its fields): how the backend says it failed, null when it does not say.
   */
  record Exit(String submissionId, Integer exitCode, boolean killed, boolean timedOut, boolean terminalSeen,
              String startError, List<String> logTail, EventType failure, JsonObject failureFields)
      implements Progress {

    public Exit(String submissionId, Integer exitCode, boolean killed, boolean timedOut, boolean terminalSeen,
                String startError, List<String> logTail) {
      this(submissionId, exitCode, killed, timedOut, terminalSeen, startError, logTail, null, null);
    }

    public JsonObject toJson() {
      return new JsonObject().put("kind", "exit").put("submission_id", submissionId)
          .put("exit_code", exitCode).put("killed", killed).put("timed_out", timedOut)
          .put("terminal_seen", terminalSeen).put("start_error", startError)
          .put("log_tail", new JsonArray(List.copyOf(logTail)))
          .put("failure", failure == null ? null : failure.name()).put("failure_fields", failureFields);
    }
  }

  static Progress fromJson(JsonObject json) {
    String id = json.getString("submission_id");
    if ("exit".equals(json.getString("kind"))) {
      return new Exit(id, json.getInteger("exit_code"), json.getBoolean("killed", false),
          json.getBoolean("timed_out", false), json.getBoolean("terminal_seen", false),
          json.getString("start_error"),
          json.getJsonArray("log_tail", new JsonArray()).stream().map(String::valueOf).toList(),
          EventType.parse(json.getString("failure")).orElse(null), json.getJsonObject("failure_fields"));
    }
    return new Event(id, EventType.valueOf(json.getString("type")), json.getJsonObject("fields", new JsonObject()));
  }
}
