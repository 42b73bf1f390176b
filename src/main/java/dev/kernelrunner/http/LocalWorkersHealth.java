package dev.kernelrunner.http;

import dev.kernelrunner.supervisor.LocalWorkersVerticle;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.stream.Collectors;

/**
 * {@code /health/ready}'s {@code local-workers} check: every GPU type of this host has its local worker connected
 * (UP); one still missing within {@code grace} of the start is STARTING (it connects a second or so after the
 * service listens); past that it is DOWN, naming the types and where their workers' output is. A local worker
 * that cannot start (its command missing, the agent not importable from AGENT_WORKDIR) would otherwise show
 * only as submissions waiting IN_QUEUE.
 */
final class LocalWorkersHealth {
  private LocalWorkersHealth() {}

  /** {@code workers}: {@code workers.list}'s entries; {@code up}: how long the service has been listening. */
  static JsonObject check(List<String> localTypes, JsonArray workers, Duration up, Duration grace) {
    Set<String> served = workers.stream().map(w -> (JsonObject) w)
        .filter(w -> LocalWorkersVerticle.TOKEN_USER.equals(w.getString("token_user"))
            && w.getBoolean("connected", false))
        .map(w -> w.getString("gpu_type")).collect(Collectors.toSet());
    List<String> missing = localTypes.stream().filter(t -> !served.contains(t)).toList();
    if (missing.isEmpty()) {
      return new JsonObject().put("status", "UP");
    }
    JsonObject check = new JsonObject().put("missing", new JsonArray(missing));
    if (up.compareTo(grace) < 0) {
      return check.put("status", "STARTING");
    }
    return check.put("status", "DOWN").put("error", "no local worker connected for " + String.join(", ", missing)
        + ": their submissions wait IN_QUEUE (the workers' output: DATA_DIR/runs/local-workers/<type>.log)");
  }
}
