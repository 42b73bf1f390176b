package dev.kernelrunner.registry;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.kernelrunner.bus.Addresses;
import dev.kernelrunner.bus.LocalCodec;
import dev.kernelrunner.config.ConfigLoader;
import dev.kernelrunner.model.Cancel;
import dev.kernelrunner.model.Unfinished;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonObject;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The registry deployed alone, its neighbours stubbed on the bus: a stream-created submission whose last client left
 * is cancelled (the tracker asked) after the grace period unless a client came back, and a finished one never.
 */
class ActiveProcessRegistryVerticleTest {
  private Vertx vertx;
  private final List<Cancel> askedTracker = new CopyOnWriteArrayList<>();

  @BeforeEach
  void deploy() throws Exception {
    vertx = Vertx.vertx();
    LocalCodec.register(vertx.eventBus(), Cancel.class, Cancel.Outcome.class, Unfinished.class,
        Unfinished.Asked.class);
    vertx.eventBus().<Cancel>consumer(Addresses.TRACKER_CANCEL, message -> {
      askedTracker.add(message.body());
      message.reply(new Cancel.Outcome(Cancel.Kind.TAKEN, "CANCELLED"));
    });
    vertx.eventBus().<Unfinished.Asked>consumer(Addresses.STORE_SUBMISSION_UNFINISHED,
        message -> message.reply(new Unfinished(List.of())));
    vertx.deployVerticle(new ActiveProcessRegistryVerticle(ConfigLoader.load(Map.of("DISCONNECT_GRACE_SECONDS", "1")),
        new SimpleMeterRegistry())).toCompletionStage().toCompletableFuture().get(30, TimeUnit.SECONDS);
  }

  @AfterEach
  void close() throws Exception {
    vertx.close().toCompletionStage().toCompletableFuture().get(30, TimeUnit.SECONDS);
  }

  @Test
  void theLastClientLeavingCancelsAfterTheGraceUnlessOneCameBackOrItFinished() throws Exception {
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
  }

  private void stream(String address, String id, boolean finished) throws Exception {
    vertx.eventBus().request(address, new JsonObject().put("submission_id", id).put("cancel_on_disconnect", true)
        .put("finished", finished)).toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
  }
}
