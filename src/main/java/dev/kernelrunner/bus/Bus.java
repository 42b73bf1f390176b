package dev.kernelrunner.bus;

import io.vertx.core.Future;
import io.vertx.core.eventbus.DeliveryOptions;
import io.vertx.core.eventbus.EventBus;
import io.vertx.core.eventbus.Message;
import io.vertx.core.json.JsonObject;
import java.time.Duration;
import java.util.function.BiConsumer;
import java.util.function.Function;
import org.slf4j.Logger;

/** Request/reply on the event bus: every consumer is served through {@link #serve}, so every message is answered. */
public final class Bus {
  private Bus() {}

  public static Future<JsonObject> request(EventBus bus, String address, JsonObject body) {
    return bus.<JsonObject>request(address, body).map(Message::body);
  }

  public static Future<JsonObject> request(EventBus bus, String address, JsonObject body, Duration timeout) {
    return bus.<JsonObject>request(address, body, new DeliveryOptions().setSendTimeout(timeout.toMillis()))
        .map(Message::body);
  }

  /**
   * Consumes {@code address} with {@code handler}: what its future holds is the reply, its failure fails the
   * message (see {@link Failures#fail}). A handler that throws, or returns null, fails the message too: no
   * sender is ever left waiting for its timeout.
   */
  public static <T> Future<Void> serve(EventBus bus, String address, Function<T, Future<?>> handler, Logger log) {
    return serve(bus, address, handler, (message, error) -> Failures.fail(message, error, log));
  }

  /** As above, with the verticle's own mapping of failures ({@code onFailure} must reply or fail). */
  public static <T> Future<Void> serve(EventBus bus, String address, Function<T, Future<?>> handler,
                                       BiConsumer<Message<T>, Throwable> onFailure) {
    return bus.<T>consumer(address, message -> {
      Future<?> reply;
      try {
        reply = handler.apply(message.body());
        if (reply == null) {
          reply = Future.failedFuture(new IllegalStateException(address + " gave no reply"));
        }
      } catch (RuntimeException e) {
        reply = Future.failedFuture(e);
      }
      reply.onComplete(ar -> {
        if (ar.succeeded()) {
          message.reply(ar.result());
        } else {
          onFailure.accept(message, ar.cause());
        }
      });
    }).completion();
  }
}
