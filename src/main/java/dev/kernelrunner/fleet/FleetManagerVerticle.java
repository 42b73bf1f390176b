package dev.kernelrunner.fleet;

import dev.kernelrunner.bus.Addresses;
import dev.kernelrunner.bus.Failures;
import dev.kernelrunner.config.AppConfig;
import dev.kernelrunner.config.AppConfig.GpuType;
import dev.kernelrunner.dstack.DstackCli;
import dev.kernelrunner.dstack.Templates;
import io.micrometer.core.instrument.MeterRegistry;
import io.vertx.core.Future;
import io.vertx.core.VerticleBase;
import io.vertx.core.eventbus.Message;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Fleet existence and state per GPU type. Local types need no fleet. A dstack type's fleet is looked up
 * ({@code fleet get --json}, or the {@code fleet list} table) before its first submission and on request, and
 * created from the fleet template and the AMD_* settings when missing; concurrent callers share one check.
 */
public class FleetManagerVerticle extends VerticleBase {
  private static final Logger log = LoggerFactory.getLogger(FleetManagerVerticle.class);
  /** How old the CLI check may be before a health request refreshes it. */
  private static final Duration CLI_CHECK_MAX_AGE = Duration.ofSeconds(30);
  /** How old a fleet's state may be before a listing asks dstack again. */
  private static final Duration FLEET_MAX_AGE = Duration.ofSeconds(15);
  /** How often known fleets are looked at again in the background. */
  private static final Duration FLEET_REFRESH = Duration.ofSeconds(60);
  /** dstack's instance statuses: the bounded label set of the node gauges. */
  private static final List<String> NODE_STATUSES = List.of("pending", "provisioning", "idle", "busy",
      "terminating", "terminated");

  private final AppConfig config;
  private final Map<String, GpuType> configured;
  private final MeterRegistry meters;
  private final Map<String, Fleet> fleets = new LinkedHashMap<>();
  private final Map<String, Future<JsonObject>> checking = new HashMap<>();
  private DstackCli cli;
  private JsonObject fleetTemplate;
  private JsonObject cliHealth = new JsonObject().put("status", "UNKNOWN");
  private Instant cliCheckedAt = Instant.EPOCH;
  private Future<JsonObject> cliCheck;

  public FleetManagerVerticle(AppConfig config, MeterRegistry meters) {
    this.config = config;
    this.configured = config.gpuTypes();
    this.meters = meters;
  }

  @Override
  public Future<?> start() {
    configured.values().stream().filter(type -> AppConfig.DSTACK_BACKEND.equals(type.backend()))
        .forEach(type -> fleets.put(type.name(), new Fleet(type, config.amd().fleetName())));
    fleets.values().forEach(fleet -> {
      for (String status : NODE_STATUSES) {
        io.micrometer.core.instrument.Gauge.builder("kernel_runner_fleet_nodes", fleet, f -> f.nodes.stream()
                .filter(node -> status.equals(((JsonObject) node).getString("status"))).count())
            .description("fleet instances by status, as dstack last reported them")
            .tag("fleet", fleet.name).tag("gpu_type", fleet.type.name()).tag("status", status).register(meters);
      }
      io.micrometer.core.instrument.Gauge.builder("kernel_runner_fleet_ready", fleet, f -> f.ready ? 1 : 0)
          .description("1 when the fleet exists and can take runs").tag("fleet", fleet.name)
          .tag("gpu_type", fleet.type.name()).register(meters);
    });
    cli = DstackCli.create(vertx, config.dstack(), meters);
    return vertx.executeBlocking(() -> Templates.load(config.dstack().fleetTemplate()), false).compose(template -> {
      fleetTemplate = template;
      return Future.all(List.of(
          vertx.eventBus().<JsonObject>consumer(Addresses.FLEET_ENSURE, this::ensure).completion(),
          vertx.eventBus().<JsonObject>consumer(Addresses.FLEET_LIST, this::list).completion(),
          vertx.eventBus().<JsonObject>consumer(Addresses.FLEET_HEALTH, this::health).completion()));
    }).onSuccess(v -> {
      if (!fleets.isEmpty()) {
        checkCli();
        // Node states for the gauges and alerts stay fresh without anyone asking (not in a dry run).
        vertx.setPeriodic(FLEET_REFRESH.toMillis(), t -> fleets.values().stream()
            .filter(f -> !f.dryRun && "UP".equals(cliHealth.getString("status")))
            .forEach(f -> check(f).onFailure(error -> {})));
      }
    });
  }

  // ---- ensure

  private void ensure(Message<JsonObject> message) {
    JsonObject body = message.body();
    String gpuType = body.getString("gpu_type");
    if (gpuType == null && body.getString("fleet_name") != null) {
      gpuType = fleets.values().stream().filter(f -> f.name.equals(body.getString("fleet_name")))
          .map(f -> f.type.name()).findFirst().orElse(null);
      if (gpuType == null) {
        message.fail(Failures.NOT_FOUND, "no fleet named " + body.getString("fleet_name") + " is configured");
        return;
      }
    }
    GpuType type = configured.get(gpuType);
    if (type == null) {
      message.fail(Failures.NOT_FOUND, "GPU type " + gpuType + " is not configured");
      return;
    }
    if (AppConfig.LOCAL_BACKEND.equals(type.backend())) {
      message.reply(local(type));
      return;
    }
    Fleet fleet = fleets.get(type.name());
    if (fleet.ready && !body.getBoolean("force", false)) {
      message.reply(fleet.toJson());
      return;
    }
    check(fleet).onSuccess(message::reply).onFailure(error -> message.fail(Failures.UNAVAILABLE, error.getMessage()));
  }

  /** One check per fleet at a time: whoever asks while one runs gets its outcome. */
  private Future<JsonObject> check(Fleet fleet) {
    Future<JsonObject> running = checking.get(fleet.name);
    if (running != null) {
      return running;
    }
    Future<JsonObject> outcome = cli.fleet(fleet.name)
        .recover(error -> error instanceof DstackCli.NotFound ? create(fleet) : Future.failedFuture(error))
        .map(described -> {
          fleet.update(described);
          return fleet.toJson();
        })
        .onFailure(error -> {
          fleet.ready = false;
          fleet.error = error.getMessage();
          fleet.checkedAt = Instant.now();
          log.warn("fleet {} is not available: {}", fleet.name, error.getMessage());
        })
        .andThen(ar -> checking.remove(fleet.name));
    checking.put(fleet.name, outcome);
    return outcome;
  }

  /** Writes the fleet configuration; applies it unless this is a dry run. */
  private Future<JsonObject> create(Fleet fleet) {
    AppConfig.Amd amd = config.amd();
    JsonObject conf = fleetTemplate.copy().put("type", "fleet").put("name", fleet.name)
        .put("nodes", "0.." + amd.fleetMaxNodes())
        .put("backends", new JsonArray().add(amd.backend()))
        .put("resources", fleetTemplate.getJsonObject("resources", new JsonObject())
            .copy().put("gpu", Templates.gpuSpec(amd.gpuType(), amd.gpuMemory())))
        .put("idle_duration", amd.fleetIdleDuration())
        .put("spot_policy", amd.spotPolicy());
    Path file = config.database().dataDir().toAbsolutePath().resolve("dstack").resolve(fleet.name + ".fleet.dstack.yml");
    return vertx.executeBlocking(() -> {
      Files.createDirectories(file.getParent());
      Files.writeString(file, conf.encodePrettily());
      return file;
    }, false).compose(written -> {
      fleet.configPath = written.toString();
      if (amd.fleetDryRun()) {
        log.info("AMD_FLEET_DRY_RUN: fleet {} is missing; its configuration was written to {} and not applied:\n{}",
            fleet.name, written, conf.encodePrettily());
        fleet.dryRun = true;
        return Future.succeededFuture(new JsonObject().put("name", fleet.name).put("status", "not_applied"));
      }
      log.info("fleet {} is missing: applying {}", fleet.name, written);
      return cli.applyFleet(written).compose(outcome -> cli.fleet(fleet.name));
    });
  }

  // ---- list and health

  /** Every configured fleet; with {@code refresh}, states older than {@link #FLEET_MAX_AGE} are checked first. */
  private void list(Message<JsonObject> message) {
    List<Future<JsonObject>> checks = new java.util.ArrayList<>();
    if (message.body().getBoolean("refresh", false)) {
      Instant stale = Instant.now().minus(FLEET_MAX_AGE);
      fleets.values().stream().filter(f -> f.checkedAt == null || f.checkedAt.isBefore(stale))
          .forEach(f -> checks.add(check(f)));
    }
    Future.join(checks).onComplete(ar -> message.reply(listing()));
  }

  private JsonObject listing() {
    JsonArray all = new JsonArray();
    configured.values().forEach(type -> all.add(AppConfig.LOCAL_BACKEND.equals(type.backend()) ? local(type)
        : fleets.get(type.name()).toJson()));
    return new JsonObject().put("fleets", all);
  }

  /** The dstack CLI (when a GPU type uses it) and each fleet; a stale CLI check is refreshed first. */
  private void health(Message<JsonObject> message) {
    if (fleets.isEmpty()) {
      message.reply(new JsonObject().put("dstack", new JsonObject().put("status", "NOT_USED")));
      return;
    }
    Future<JsonObject> cliState = Duration.between(cliCheckedAt, Instant.now()).compareTo(CLI_CHECK_MAX_AGE) > 0
        ? checkCli() : Future.succeededFuture(cliHealth);
    cliState.onComplete(ar -> {
      JsonObject fleetStates = new JsonObject();
      fleets.values().forEach(fleet -> fleetStates.put(fleet.name, new JsonObject()
          .put("status", fleet.ready ? "UP" : fleet.checkedAt == null ? "UNKNOWN" : "DOWN")
          .put("fleet_status", fleet.status).put("error", fleet.error).put("last_checked", fleet.checkedText())));
      message.reply(new JsonObject().put("dstack", cliHealth).put("fleets", fleetStates));
    });
  }

  private Future<JsonObject> checkCli() {
    if (cliCheck != null) {
      return cliCheck;
    }
    cliCheck = cli.version().map(version -> new JsonObject().put("status", "UP").put("version", version))
        .recover(error -> Future.succeededFuture(new JsonObject().put("status", "DOWN")
            .put("error", "the dstack CLI (" + String.join(" ", cli.command()) + ") is not usable: "
                + error.getMessage())))
        .onSuccess(state -> {
          if (!"UP".equals(state.getString("status")) && !"DOWN".equals(cliHealth.getString("status"))) {
            log.warn("{}", state.getString("error"));
          }
          cliHealth = state;
          cliCheckedAt = Instant.now();
        })
        .andThen(ar -> cliCheck = null);
    return cliCheck;
  }

  private static JsonObject local(GpuType type) {
    return new JsonObject().put("name", type.name()).put("gpu_type", type.name()).put("backend", type.backend())
        .put("max_nodes", type.capacity()).put("status", "active").put("ready", true);
  }

  /** What is known of one dstack fleet. */
  private final class Fleet {
    final GpuType type;
    final String name;
    boolean ready;
    boolean dryRun;
    String status;
    String error;
    String configPath;
    JsonArray nodes = new JsonArray();
    Instant checkedAt;

    Fleet(GpuType type, String name) {
      this.type = type;
      this.name = name;
    }

    /** From {@code fleet get --json} (instances with their status) or a {@code fleet list} row. */
    void update(JsonObject described) {
      checkedAt = Instant.now();
      status = described.getString("status");
      error = null;
      ready = !dryRun && status != null && !List.of("terminating", "terminated", "failed").contains(status);
      if (dryRun) {
        error = "AMD_FLEET_DRY_RUN is set: the fleet configuration was written to " + configPath
            + " and not applied";
      }
      JsonArray instances = described.getJsonArray("instances");
      nodes = new JsonArray();
      if (instances != null) {
        for (Object item : instances) {
          JsonObject instance = (JsonObject) item;
          JsonObject instanceType = instance.getJsonObject("instance_type", new JsonObject());
          nodes.add(new JsonObject().put("name", instance.getString("name"))
              .put("status", instance.getString("status")).put("instance_type", instanceType.getString("name"))
              .put("backend", instance.getString("backend")).put("region", instance.getString("region"))
              .put("price", instance.getValue("price")));
        }
      }
    }

    String checkedText() {
      return checkedAt == null ? null : checkedAt.toString();
    }

    JsonObject toJson() {
      AppConfig.Amd amd = config.amd();
      return new JsonObject().put("name", name).put("gpu_type", type.name()).put("backend", type.backend())
          .put("dstack_backend", amd.backend()).put("gpu", Templates.gpuSpec(amd.gpuType(), amd.gpuMemory()))
          .put("max_nodes", type.capacity()).put("status", status).put("ready", ready).put("dry_run", dryRun)
          .put("nodes", nodes.copy()).put("error", error).put("config_path", configPath)
          .put("last_checked", checkedText());
    }
  }
}
