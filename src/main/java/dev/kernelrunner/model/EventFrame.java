package dev.kernelrunner.model;

import io.vertx.core.json.JsonObject;
import java.time.OffsetDateTime;

/**
 * One stored event of a submission. On the wire (SSE data, bus) it is flat:
 * {@code {"submission_id", "seq", "status", "at", ...fields}}.
 */
public record EventFrame(String submissionId, int seq, EventType type, OffsetDateTime at, JsonObject fields) {

  public JsonObject toJson() {
    JsonObject json = new JsonObject()
        .put("submission_id", submissionId).put("seq", seq).put("status", type.name()).put("at", at.toString());
    fields.forEach(e -> json.put(e.getKey(), e.getValue()));
    return json;
  }

  public static EventFrame fromJson(JsonObject json) {
    JsonObject fields = json.copy();
    fields.remove("submission_id");
    fields.remove("seq");
    fields.remove("status");
    fields.remove("at");
    return new EventFrame(json.getString("submission_id"), json.getInteger("seq"),
        EventType.valueOf(json.getString("status")), OffsetDateTime.parse(json.getString("at")), fields);
  }
}
