package dev.kernelrunner.fleet;

import dev.kernelrunner.bus.Addresses;
import dev.kernelrunner.bus.Failures;
import dev.kernelrunner.config.AppConfig;
import dev.kernelrunner.config.AppConfig.GpuType;
import io.micrometer.core.instrument.MeterRegistry;
import io.vertx.core.Future;
import io.vertx.core.VerticleBase;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.util.List;
import java.util.Map;

/**
 * Fleet existence and state per GPU type. The local backend needs no fleet, so its types are always ready;
 * dstack fleets plug in here (see the dstack issue) and until then are reported as unavailable.
 */
public class FleetManagerVerticle extends VerticleBase {
  private final Map<String, GpuType> configured;
  private final MeterRegistry meters;

  public FleetManagerVerticle(AppConfig config, MeterRegistry meters) {
    this.configured = config.gpuTypes();
    this.meters = meters;
  }

  @Override
  public Future<?> start() {
    return Future.all(List.of(
        vertx.eventBus().<JsonObject>consumer(Addresses.FLEET_ENSURE, message -> {
          GpuType type = configured.get(message.body().getString("gpu_type"));
          if (type == null) {
            message.fail(Failures.NOT_FOUND, "GPU type " + message.body().getString("gpu_type") + " is not configured");
          } else if (AppConfig.LOCAL_BACKEND.equals(type.backend())) {
            message.reply(describe(type).put("ready", true));
          } else {
            message.fail(Failures.UNAVAILABLE, "no fleet backend for " + type.backend() + " in this build");
          }
        }).completion(),
        vertx.eventBus().<JsonObject>consumer(Addresses.FLEET_LIST, message -> {
          JsonArray fleets = new JsonArray();
          configured.values().forEach(type -> fleets.add(describe(type)
              .put("ready", AppConfig.LOCAL_BACKEND.equals(type.backend()))));
          message.reply(new JsonObject().put("fleets", fleets));
        }).completion()));
  }

  private static JsonObject describe(GpuType type) {
    return new JsonObject().put("gpu_type", type.name()).put("backend", type.backend())
        .put("max_nodes", type.capacity());
  }
}
