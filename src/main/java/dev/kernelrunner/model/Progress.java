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
   * {@code terminalSeen}: the agent had already reported how it ended; {@code startError}: it never started.
   */
  record Exit(String submissionId, Integer exitCode, boolean killed, boolean timedOut, boolean terminalSeen,
              String startError, List<String> logTail) implements Progress {
    public JsonObject toJson() {
      return new JsonObject().put("kind", "exit").put("submission_id", submissionId)
          .put("exit_code", exitCode).put("killed", killed).put("timed_out", timedOut)
          .put("terminal_seen", terminalSeen).put("start_error", startError)
          .put("log_tail", new JsonArray(List.copyOf(logTail)));
    }
  }

  static Progress fromJson(JsonObject json) {
    String id = json.getString("submission_id");
    if ("exit".equals(json.getString("kind"))) {
      return new Exit(id, json.getInteger("exit_code"), json.getBoolean("killed", false),
          json.getBoolean("timed_out", false), json.getBoolean("terminal_seen", false),
          json.getString("start_error"),
          json.getJsonArray("log_tail", new JsonArray()).stream().map(String::valueOf).toList());
    }
    return new Event(id, EventType.valueOf(json.getString("type")), json.getJsonObject("fields", new JsonObject()));
  }
}
