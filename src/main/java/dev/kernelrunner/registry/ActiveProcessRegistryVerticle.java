package dev.kernelrunner.registry;

import dev.kernelrunner.bus.Addresses;
import dev.kernelrunner.bus.Bus;
import dev.kernelrunner.model.Cancel;
import dev.kernelrunner.model.Unfinished;
import dev.kernelrunner.config.AppConfig;
import io.micrometer.core.instrument.MeterRegistry;
import io.vertx.core.Future;
import io.vertx.core.VerticleBase;
import io.vertx.core.eventbus.DeliveryOptions;
import io.vertx.core.eventbus.EventBus;
import io.vertx.core.eventbus.Message;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Which submission runs where (backend, node, pid, dstack run name), how many SSE clients watch each, and the
 * disconnect timers: a stream-created submission whose last client went away and did not come back within the grace
 * period is cancelled (through the tracker, which decides every cancel).
 */
public class ActiveProcessRegistryVerticle extends VerticleBase {
  private static final Logger log = LoggerFactory.getLogger(ActiveProcessRegistryVerticle.class);
  private static final String CLIENT_DISCONNECTED = "client_disconnected";

  private final AppConfig config;
  private final MeterRegistry meters;
  // Concurrent maps: the scrape reads their sizes from another thread; only this verticle changes them.
  private final Map<String, JsonObject> processes = new java.util.concurrent.ConcurrentHashMap<>();
  private final Map<String, Integer> streams = new java.util.concurrent.ConcurrentHashMap<>();
  private final Map<String, Long> graceTimers = new HashMap<>();
  private EventBus bus;

  public ActiveProcessRegistryVerticle(AppConfig config, MeterRegistry meters) {
    this.config = config;
    this.meters = meters;
  }

  @Override
  public Future<?> start() {
    bus = vertx.eventBus();
    meters.gauge("kernel_runner_registry_processes", processes, Map::size);
    meters.gauge("kernel_runner_sse_streams_open", streams, s -> s.values().stream().mapToInt(i -> i).sum());
    return Future.all(List.of(
            Bus.serve(bus, Addresses.REGISTRY_REGISTER, this::register, log),
            Bus.serve(bus, Addresses.REGISTRY_UNREGISTER, this::unregister, log),
            Bus.serve(bus, Addresses.REGISTRY_STREAM_OPENED, this::streamOpened, log),
            Bus.serve(bus, Addresses.REGISTRY_STREAM_CLOSED, this::streamClosed, log),
            Bus.serve(bus, Addresses.REGISTRY_LIST, this::list, log)))
        .compose(v -> watchUnwatched());
  }

  /** After a restart no client is connected: stream-created submissions get the grace period to come back. */
  private Future<Void> watchUnwatched() {
    return bus.<Unfinished>request(Addresses.STORE_SUBMISSION_UNFINISHED, new Unfinished.Asked()).map(reply -> {
      reply.body().submissions().stream().filter(Unfinished.Found::cancelOnDisconnect)
          .forEach(found -> startGrace(found.id()));
      return null;
    });
  }

  private Future<JsonObject> register(JsonObject body) {
    String id = body.getString("submission_id");
    processes.put(id, body.copy());
    return Bus.request(bus, Addresses.STORE_SUBMISSION_SET_RUN, body);
  }

  private Future<JsonObject> unregister(JsonObject body) {
    JsonObject removed = processes.remove(body.getString("submission_id"));
    return Future.succeededFuture(new JsonObject().put("removed", removed != null));
  }

  private Future<JsonObject> streamOpened(JsonObject body) {
    String id = body.getString("submission_id");
    int count = streams.merge(id, 1, Integer::sum);
    Long timer = graceTimers.remove(id);
    if (timer != null) {
      vertx.cancelTimer(timer);
      log.info("a client came back to {} within the grace period", id);
    }
    return Future.succeededFuture(new JsonObject().put("streams", count));
  }

  private Future<JsonObject> streamClosed(JsonObject body) {
    String id = body.getString("submission_id");
    int count = streams.merge(id, -1, Integer::sum);
    if (count <= 0) {
      streams.remove(id);
      if (body.getBoolean("cancel_on_disconnect", false) && !body.getBoolean("finished", false)) {
        startGrace(id);
      }
    }
    return Future.succeededFuture(new JsonObject().put("streams", Math.max(count, 0)));
  }

  private void startGrace(String id) {
    Duration grace = config.sse().disconnectGrace();
    Long previous = graceTimers.put(id, vertx.setTimer(Math.max(1, grace.toMillis()), t -> {
      graceTimers.remove(id);
      if (streams.getOrDefault(id, 0) > 0) {
        return;
      }
      log.info("no client for {} within {} s: cancelling it", id, grace.toSeconds());
      cancel(id, "system", CLIENT_DISCONNECTED).onFailure(error ->
          log.error("could not cancel {} after its clients left: {}", id, error.toString()));
    }));
    if (previous != null) {
      vertx.cancelTimer(previous);
    }
  }

  private Future<JsonObject> list(JsonObject body) {
    JsonArray running = new JsonArray();
    processes.values().forEach(running::add);
    JsonObject watched = new JsonObject();
    streams.forEach(watched::put);
    return Future.succeededFuture(new JsonObject().put("processes", running).put("streams", watched));
  }

  /** Asks the tracker, which decides every cancel, and waits until the run is gone. */
  private Future<Cancel.Outcome> cancel(String id, String by, String reason) {
    Duration wait = config.agent().killGrace().plusSeconds(45);
    return bus.<Cancel.Outcome>request(Addresses.TRACKER_CANCEL, new Cancel(id, by, reason),
        new DeliveryOptions().setSendTimeout(wait.toMillis())).map(Message::body);
  }
}
