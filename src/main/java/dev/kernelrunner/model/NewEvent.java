package dev.kernelrunner.model;

import io.vertx.core.json.JsonObject;

/**
 * An event to store: its type and fields ({@code payload} is the fields already encoded as JSON, done once,
 * off the store's thread), whether it ends the submission, and what it sets on the submission's row.
 */
public record NewEvent(EventType type, JsonObject fields, String payload, boolean terminal, JsonObject result,
                       JsonObject error, String cancelledBy, String cancelReason) {

  /** Whether it can skip waiting for the WAL flush (it neither ends the submission nor carries its outcome). */
  public boolean progressOnly() {
    return !terminal && result == null && error == null && cancelledBy == null;
  }
}
