package dev.kernelrunner.model;

import io.vertx.core.json.JsonObject;
import java.time.OffsetDateTime;

/**
 * One stored event of a submission. On the wire (SSE data, bus) it is flat:
 * {@code {"submission_id", "seq", "status", "at", ...fields}}; the frame's own keys win over fields of the same
 * name.
 */
public record EventFrame(String submissionId, int seq, EventType type, OffsetDateTime at, JsonObject fields) {

  public JsonObject toJson() {
    JsonObject json = new JsonObject();
    fields.forEach(e -> json.put(e.getKey(), e.getValue()));
    return json.put("submission_id", submissionId).put("seq", seq).put("status", type.name())
        .put("at", at.toString());
  }

  /** One SSE message: the event's id (its seq, for Last-Event-ID), its type, its JSON data. */
  public static String sse(int seq, EventType type, String data) {
    return "id: " + seq + "\nevent: " + type.name() + "\ndata: " + data + "\n\n";
  }
}
