package dev.kernelrunner.registry;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.kernelrunner.backend.RunOrder;
import dev.kernelrunner.bus.Addresses;
import dev.kernelrunner.bus.LocalCodec;
import dev.kernelrunner.config.ConfigLoader;
import dev.kernelrunner.model.Cancel;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The registry deployed alone, its neighbours stubbed on the bus: the tracker decides what a cancel means, and the
 * registry does what that says (stop the run, or answer with the status); a stream-created submission whose last
 * client left is cancelled after the grace period unless a client came back, and a finished one never.
 */
class ActiveProcessRegistryVerticleTest {
  private Vertx vertx;
  private final List<Cancel> askedTracker = new CopyOnWriteArrayList<>();
  private final List<String> killed = new CopyOnWriteArrayList<>();
  private final Map<String, Cancel.Outcome> outcomes = new java.util.concurrent.ConcurrentHashMap<>();

  @BeforeEach
  void deploy() throws Exception {
    vertx = Vertx.vertx();
    LocalCodec.register(vertx.eventBus(), Cancel.class, Cancel.Outcome.class, RunOrder.Kill.class,
        RunOrder.Stopped.class);
    vertx.eventBus().<Cancel>consumer(Addresses.TRACKER_CANCEL, message -> {
      askedTracker.add(message.body());
      message.reply(outcomes.getOrDefault(message.body().submissionId(),
          new Cancel.Outcome(Cancel.Kind.NOT_ACTIVE, null)));
    });
    vertx.eventBus().<RunOrder.Kill>consumer(Addresses.SUPERVISOR_KILL, message -> {
      killed.add(message.body().submissionId());
      message.reply(new RunOrder.Stopped("CANCELLED", true));
    });
    vertx.eventBus().<JsonObject>consumer(Addresses.STORE_SUBMISSION_GET,
        message -> message.reply(new JsonObject().put("status", "BENCHMARKED")));
    vertx.eventBus().<JsonObject>consumer(Addresses.STORE_SUBMISSION_UNFINISHED,
        message -> message.reply(new JsonObject().put("submissions", new JsonArray())));
    vertx.deployVerticle(new ActiveProcessRegistryVerticle(ConfigLoader.load(Map.of("DISCONNECT_GRACE_SECONDS", "1")),
        new SimpleMeterRegistry())).toCompletionStage().toCompletableFuture().get(30, TimeUnit.SECONDS);
  }

  @AfterEach
  void close() throws Exception {
    vertx.close().toCompletionStage().toCompletableFuture().get(30, TimeUnit.SECONDS);
  }

  private JsonObject cancel(String id) throws Exception {
    return vertx.eventBus().<JsonObject>request(Addresses.SUBMISSIONS_CANCEL, new JsonObject()
            .put("submission_id", id).put("cancelled_by", "ann").put("reason", "user_requested"))
        .toCompletionStage().toCompletableFuture().get(30, TimeUnit.SECONDS).body();
  }

  @Test
  void aCancelDoesWhatTheTrackerDecided() throws Exception {
    outcomes.put("running", new Cancel.Outcome(Cancel.Kind.RUNNING, "COMPILING"));
    outcomes.put("queued", new Cancel.Outcome(Cancel.Kind.CANCELLED, "CANCELLED"));
    outcomes.put("done", new Cancel.Outcome(Cancel.Kind.FINISHED, "WRONG_ANSWER"));
    assertEquals("CANCELLED", cancel("running").getString("status"), "its run was stopped");
    assertEquals(List.of("running"), killed);
    assertEquals("CANCELLED", cancel("queued").getString("status"));
    assertEquals("WRONG_ANSWER", cancel("done").getString("status"));
    assertEquals("BENCHMARKED", cancel("gone").getString("status"), "not followed: the stored status");
    assertEquals(List.of("running"), killed, "only a running one is stopped");
    assertEquals(new Cancel("running", "ann", "user_requested"), askedTracker.get(0));
  }

  @Test
  void theLastClientLeavingCancelsAfterTheGraceUnlessOneCameBackOrItFinished() throws Exception {
    outcomes.put("left", new Cancel.Outcome(Cancel.Kind.RUNNING, "CHECKING"));
    outcomes.put("back", new Cancel.Outcome(Cancel.Kind.RUNNING, "CHECKING"));
    stream(Addresses.REGISTRY_STREAM_OPENED, "left", false);
    stream(Addresses.REGISTRY_STREAM_CLOSED, "left", false);
    stream(Addresses.REGISTRY_STREAM_OPENED, "back", false);
    stream(Addresses.REGISTRY_STREAM_CLOSED, "back", false);
    stream(Addresses.REGISTRY_STREAM_OPENED, "back", false); // came back within the grace
    stream(Addresses.REGISTRY_STREAM_OPENED, "ended", true);
    stream(Addresses.REGISTRY_STREAM_CLOSED, "ended", true);
    Thread.sleep(2500);
    assertEquals(List.of("left"), askedTracker.stream().map(Cancel::submissionId).toList());
    assertEquals("system", askedTracker.get(0).cancelledBy());
    assertEquals("client_disconnected", askedTracker.get(0).reason());
    assertTrue(killed.contains("left"));
  }

  private void stream(String address, String id, boolean finished) throws Exception {
    vertx.eventBus().request(address, new JsonObject().put("submission_id", id).put("cancel_on_disconnect", true)
        .put("finished", finished)).toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
  }
}
