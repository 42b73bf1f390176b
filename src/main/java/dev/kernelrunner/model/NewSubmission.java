package dev.kernelrunner.model;

import io.vertx.core.json.JsonObject;

/**
 * A validated submission request, as the HTTP edge hands it to the tracker ({@code submissions.create}, passed as is);
 * answered {@link Created}.
 */
public record NewSubmission(String userId, String problem, String language, String gpuType, String dtype,
                            String code, Mode mode, boolean cancelOnDisconnect) {

  /** The submission stored and queued: its id, status (IN_QUEUE), place in line and first event's seq. */
  public record Created(String id, String status, int position, int seq) {}

  public JsonObject toJson() {
    return new JsonObject()
        .put("user_id", userId).put("problem", problem).put("language", language)
        .put("gpu_type", gpuType).put("dtype", dtype).put("code", code).put("mode", mode.wire())
        .put("cancel_on_disconnect", cancelOnDisconnect);
  }
}
