package dev.kernelrunner.supervisor;

import dev.kernelrunner.model.EventType;
import io.vertx.core.json.JsonObject;
import java.util.List;

/** What a backend tells the supervisor about a run. */
public interface RunListener {

  void onEvent(EventType type, JsonObject fields);

  /** The run is over and its processes are gone; {@code exitCode} is null when unknown. */
  void onExit(Integer exitCode, List<String> logTail);
}
