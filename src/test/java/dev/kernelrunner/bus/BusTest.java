package dev.kernelrunner.bus;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.eventbus.ReplyException;
import io.vertx.core.json.JsonObject;
import io.vertx.junit5.VertxExtension;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.slf4j.LoggerFactory;

/** Every message to a consumer served through {@link Bus#serve} is answered, whatever its handler does. */
@ExtendWith(VertxExtension.class)
class BusTest {
  private static final Duration LONG = Duration.ofSeconds(30);

  private static Throwable failureOf(Vertx vertx, String address) throws Exception {
    long started = System.nanoTime();
    Throwable error = Bus.request(vertx.eventBus(), address, new JsonObject(), LONG)
        .transform(ar -> Future.succeededFuture(ar.cause()))
        .toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
    assertTrue(System.nanoTime() - started < Duration.ofSeconds(5).toNanos(), "answered, not timed out");
    return error;
  }

  @Test
  void aHandlerThatThrowsOrReturnsNothingFailsTheMessageAtOnce(Vertx vertx) throws Exception {
    var log = LoggerFactory.getLogger(BusTest.class);
    Bus.<JsonObject>serve(vertx.eventBus(), "t.throws", body -> {
      throw new IllegalStateException("bug");
    }, log).toCompletionStage().toCompletableFuture().get(5, TimeUnit.SECONDS);
    Bus.<JsonObject>serve(vertx.eventBus(), "t.null", body -> null, log)
        .toCompletionStage().toCompletableFuture().get(5, TimeUnit.SECONDS);
    Bus.<JsonObject>serve(vertx.eventBus(), "t.coded", body -> Future.failedFuture(
        new Failures.CodedException(Failures.NOT_FOUND, "no such thing")), log)
        .toCompletionStage().toCompletableFuture().get(5, TimeUnit.SECONDS);

    ReplyException thrown = (ReplyException) failureOf(vertx, "t.throws");
    assertEquals(Failures.INTERNAL, thrown.failureCode());
    assertEquals(Failures.INTERNAL, ((ReplyException) failureOf(vertx, "t.null")).failureCode());
    ReplyException coded = (ReplyException) failureOf(vertx, "t.coded");
    assertEquals(Failures.NOT_FOUND, coded.failureCode());
    assertEquals("no such thing", coded.getMessage());
  }

  @Test
  void aFutureIsTheReply(Vertx vertx) throws Exception {
    Bus.<JsonObject>serve(vertx.eventBus(), "t.echo", body -> Future.succeededFuture(body.copy().put("seen", true)),
        LoggerFactory.getLogger(BusTest.class)).toCompletionStage().toCompletableFuture().get(5, TimeUnit.SECONDS);
    JsonObject reply = Bus.request(vertx.eventBus(), "t.echo", new JsonObject().put("a", 1))
        .toCompletionStage().toCompletableFuture().get(5, TimeUnit.SECONDS);
    assertEquals(new JsonObject().put("a", 1).put("seen", true), reply);
  }
}
