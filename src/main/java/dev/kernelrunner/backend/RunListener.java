package dev.kernelrunner.backend;

import dev.kernelrunner.model.EventType;
import io.vertx.core.Future;
import io.vertx.core.json.JsonObject;
import java.util.List;

/** What a backend tells the supervisor about a run. */
public interface RunListener {

  void onEvent(EventType type, JsonObject fields);

  /** The run is over and its processes are gone; {@code exitCode} is null when unknown. */
  void onExit(Integer exitCode, List<String> logTail);

  /**
   * The run is over and the backend knows why it failed ({@code type} is an error event, {@code fields} carry
   * its message); said instead of {@link #onExit}.
   */
  void onFailed(EventType type, JsonObject fields, List<String> logTail);

  /**
   * The machine running it went away for good (a worker that did not come back): what it did is unknown, and the
   * submission may be tried again. Said instead of {@link #onExit}.
   */
  default void onLost(String reason, List<String> logTail) {
    onFailed(EventType.ERROR, new JsonObject().put("message", reason), logTail);
  }

  /**
   * The backend's name for the run changed (a new attempt, or a holder named in it); done once the name is stored
   * with the submission, so that a restart from then on sees it.
   */
  default Future<Void> onRunName(String runName) {
    return Future.succeededFuture();
  }

  /**
   * Every event of the first {@code lines} log lines has been handed over; {@code position} is the backend's note
   * of where they end (where to resume after a restart).
   */
  default void onLogPosition(int lines, String position) {}
}
