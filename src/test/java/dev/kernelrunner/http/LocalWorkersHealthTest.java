package dev.kernelrunner.http;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

class LocalWorkersHealthTest {
  private static final Duration GRACE = Duration.ofSeconds(15);

  private static JsonObject worker(String user, String type, boolean connected) {
    return new JsonObject().put("token_user", user).put("gpu_type", type).put("connected", connected);
  }

  @Test
  void upWhenEveryLocalTypeHasItsWorkerConnected() {
    JsonArray workers = new JsonArray().add(worker("local-workers", "H100", true))
        .add(worker("local-workers", "A100", true));
    assertEquals("UP", LocalWorkersHealth.check(List.of("H100", "A100"), workers, Duration.ofHours(1), GRACE)
        .getString("status"));
  }

  @Test
  void startingWithinTheGraceThenDownNamingTheTypeAndItsLog() {
    JsonArray workers = new JsonArray().add(worker("local-workers", "H100", true));
    JsonObject early = LocalWorkersHealth.check(List.of("H100", "A100"), workers, Duration.ofSeconds(2), GRACE);
    assertEquals("STARTING", early.getString("status"));
    assertEquals(new JsonArray().add("A100"), early.getJsonArray("missing"));
    JsonObject late = LocalWorkersHealth.check(List.of("H100", "A100"), workers, Duration.ofSeconds(20), GRACE);
    assertEquals("DOWN", late.getString("status"));
    assertTrue(late.getString("error").contains("A100") && late.getString("error").contains("local-workers"),
        late.encode());
  }

  @Test
  void onlyTheServicesOwnConnectedWorkersCount() {
    // A worker of another machine (another token) for the same type, or one of ours that is away, is not the
    // local worker.
    JsonArray workers = new JsonArray().add(worker("gpu-box", "H100", true))
        .add(worker("local-workers", "H100", false));
    assertEquals("DOWN", LocalWorkersHealth.check(List.of("H100"), workers, Duration.ofMinutes(1), GRACE)
        .getString("status"));
  }
}
