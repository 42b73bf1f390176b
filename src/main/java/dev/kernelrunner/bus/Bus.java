package dev.kernelrunner.bus;

import io.vertx.core.Future;
import io.vertx.core.eventbus.DeliveryOptions;
import io.vertx.core.eventbus.EventBus;
import io.vertx.core.eventbus.Message;
import io.vertx.core.json.JsonObject;
import java.time.Duration;

/** Request/reply with JSON bodies. */
public final class Bus {
  private Bus() {}

  public static Future<JsonObject> request(EventBus bus, String address, JsonObject body) {
    return bus.<JsonObject>request(address, body).map(Message::body);
  }

  public static Future<JsonObject> request(EventBus bus, String address, JsonObject body, Duration timeout) {
    return bus.<JsonObject>request(address, body, new DeliveryOptions().setSendTimeout(timeout.toMillis()))
        .map(Message::body);
  }
}
