package dev.kernelrunner.fleet;

import dev.kernelrunner.bus.Addresses;
import dev.kernelrunner.bus.Bus;
import dev.kernelrunner.bus.Failures;
import dev.kernelrunner.config.AppConfig;
import dev.kernelrunner.config.AppConfig.GpuType;
import dev.kernelrunner.dstack.DstackApi;
import dev.kernelrunner.dstack.DstackError;
import dev.kernelrunner.dstack.Templates;
import io.micrometer.core.instrument.MeterRegistry;
import io.vertx.core.Future;
import io.vertx.core.VerticleBase;
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
 * Fleet existence and state per GPU type, and the dstack server's health. Local types need no fleet. A dstack
 * type's fleet is looked up ({@code fleets/get}) before its first submission and on request, and created
 * ({@code fleets/get_plan} + {@code fleets/apply}) from the fleet template and the AMD_* settings when missing;
 * concurrent callers share one check. The server's version ({@code server/get_info}) is checked at start.
 */
public class FleetManagerVerticle extends VerticleBase {
  private static final Logger log = LoggerFactory.getLogger(FleetManagerVerticle.class);
  /** How old the server check may be before a health request refreshes it. */
  private static final Duration SERVER_CHECK_MAX_AGE = Duration.ofSeconds(30);
  /**
   * A server found unusable is asked again sooner: while it is, submissions for its GPU types are refused, and one
   * put right (a token fixed, an upgrade) should take them again within seconds, not half a minute.
   */
  private static final Duration DOWN_CHECK_MAX_AGE = Duration.ofSeconds(2);
  /** How old a fleet's state may be before a listing asks dstack again. */
  private static final Duration FLEET_MAX_AGE = Duration.ofSeconds(15);
  /** How often known fleets are looked at again in the background. */
  private static final Duration FLEET_REFRESH = Duration.ofSeconds(60);
  /** dstack's instance statuses: the bounded label set of the node gauges. */
  private static final List<String> NODE_STATUSES = List.of("pending", "provisioning", "idle", "busy",
      "terminating", "terminated");

  /** Fleets whose idle_duration was warned about (persistent worker runs want 0). */
  private final java.util.Set<String> warnedIdle = new java.util.HashSet<>();
  private final AppConfig config;
  private final Map<String, GpuType> configured;
  private final MeterRegistry meters;
  private final Map<String, Fleet> fleets = new LinkedHashMap<>();
  private final Map<String, Future<JsonObject>> checking = new HashMap<>();
  private final DstackApi api;
  private JsonObject fleetTemplate;
  private JsonObject serverHealth = new JsonObject().put("status", "UNKNOWN");
  private Instant serverCheckedAt = Instant.EPOCH;
  private Future<JsonObject> serverCheck;

  /** {@code api}: the configured dstack server's, shared with the dstack backend; null when none is configured. */
  public FleetManagerVerticle(AppConfig config, MeterRegistry meters, DstackApi api) {
    this.config = config;
    this.configured = config.gpuTypes();
    this.meters = meters;
    this.api = api;
  }

  /** The fleet spec sent to {@code fleets/get_plan} and {@code fleets/apply}, from the template and AMD_*. */
  /**
   * The fleet's spec. With persistent worker runs its {@code idle_duration} is 0: the worker run itself keeps the
   * machine for AMD_FLEET_IDLE_DURATION once its work is done, and an instance a stopped run leaves would otherwise
   * idle that long again (a run on an existing fleet instance gets the fleet's idle_duration, not its own:
   * core/models/profiles.py:319-326; instances past it are terminated, pipeline_tasks/instances/check.py:85-102).
   */
  static JsonObject fleetSpec(JsonObject template, AppConfig.Amd amd, String name, boolean persistentWorkers) {
    // A backend fleet sets nodes and no env (server/services/fleets.py:1396-1422); nodes is {min, target, max}
    // (core/models/fleets.py:156-185); the spec needs a profile (core/models/fleets.py:371-376).
    JsonObject conf = template.copy().put("type", "fleet").put("name", name)
        .put("nodes", new JsonObject().put("min", 0).put("target", 0).put("max", amd.fleetMaxNodes()))
        .put("backends", new JsonArray().add(amd.backend()))
        .put("resources", template.getJsonObject("resources", new JsonObject())
            .copy().put("gpu", Templates.gpuSpec(amd.gpuType(), amd.gpuMemory())))
        .put("idle_duration", persistentWorkers ? "0s" : amd.fleetIdleDuration())
        .put("spot_policy", amd.spotPolicy());
    conf.remove("env");
    return new JsonObject().put("configuration", conf).put("profile", new JsonObject().put("name", "default"));
  }

  @Override
  public Future<?> start() {
    // A dstack type's fleet; with persistent worker runs the type is served by workers, on that same fleet.
    configured.values().stream().filter(type -> AppConfig.DSTACK_BACKEND.equals(type.backend())
            || (config.dstackWorkers().persistent() && type.name().equals(config.amd().gpuType())))
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
    return vertx.executeBlocking(() -> Templates.load(config.dstack().fleetTemplate()), false).compose(template -> {
      fleetTemplate = template;
      return Future.all(List.of(
          Bus.serve(vertx.eventBus(), Addresses.FLEET_ENSURE, this::ensure, log),
          Bus.serve(vertx.eventBus(), Addresses.FLEET_LIST, this::list, log),
          Bus.serve(vertx.eventBus(), Addresses.FLEET_HEALTH, this::health, log)));
    }).onSuccess(v -> {
      if (!fleets.isEmpty()) {
        checkServer();
        // Node states for the gauges and alerts stay fresh without anyone asking (not in a dry run).
        vertx.setPeriodic(FLEET_REFRESH.toMillis(), t -> fleets.values().stream()
            .filter(f -> !f.dryRun && "UP".equals(serverHealth.getString("status")))
            .forEach(f -> check(f).onFailure(error -> log.debug("fleet {} refresh: {}", f.name, error.getMessage()))));
      }
    });
  }

  // ---- ensure

  private Future<JsonObject> ensure(JsonObject body) {
    String gpuType = body.getString("gpu_type");
    if (gpuType == null && body.getString("fleet_name") != null) {
      gpuType = fleets.values().stream().filter(f -> f.name.equals(body.getString("fleet_name")))
          .map(f -> f.type.name()).findFirst().orElse(null);
      if (gpuType == null) {
        return Future.failedFuture(new Failures.CodedException(Failures.NOT_FOUND,
            "no fleet named " + body.getString("fleet_name") + " is configured"));
      }
    }
    GpuType type = configured.get(gpuType);
    if (type == null) {
      return Future.failedFuture(new Failures.CodedException(Failures.NOT_FOUND,
          "GPU type " + gpuType + " is not configured"));
    }
    Fleet fleet = fleets.get(type.name());
    if (fleet == null) { // local GPUs, or machines that connect as workers: no fleet of ours
      return Future.succeededFuture(local(type));
    }
    if (fleet.ready && !body.getBoolean("force", false)) {
      return Future.succeededFuture(fleet.toJson());
    }
    return check(fleet).recover(error -> Future.failedFuture(
        new Failures.CodedException(Failures.UNAVAILABLE, error.getMessage())));
  }

  /** One check per fleet at a time: whoever asks while one runs gets its outcome. */
  private Future<JsonObject> check(Fleet fleet) {
    Future<JsonObject> running = checking.get(fleet.name);
    if (running != null) {
      return running;
    }
    if (api == null) {
      return Future.failedFuture(notConfigured());
    }
    Future<JsonObject> outcome = serverVersionChecked().compose(v -> api.getFleet(fleet.name))
        .compose(described -> keepInStep(fleet, described))
        .recover(error -> error instanceof DstackError e && e.kind() == DstackError.Kind.NOT_FOUND
            ? create(fleet) : Future.failedFuture(error))
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

  /**
   * An existing fleet whose {@code nodes.max} or {@code spot_policy} differ from AMD_FLEET_MAX_NODES or
   * AMD_SPOT_POLICY is updated in place, as {@code dstack apply} does (fleets/get_plan, then fleets/apply with the
   * fleet as it is as {@code current_resource}: server/services/fleets.py:1134-1148; both fields may change in place,
   * fleets.py:1251-1276): its configuration as dstack stores it, with those two fields changed. Otherwise surplus
   * runs fail "Fleet is at capacity" (pipeline_tasks/jobs_submitted.py:660-668) for good.
   */
  private Future<JsonObject> keepInStep(Fleet fleet, JsonObject described) {
    JsonObject spec = described.getJsonObject("spec", new JsonObject());
    JsonObject conf = spec.getJsonObject("configuration", new JsonObject());
    JsonObject nodes = conf.getValue("nodes") instanceof JsonObject n ? n : new JsonObject();
    int maxNodes = config.amd().fleetMaxNodes();
    String spot = config.amd().spotPolicy();
    boolean nodesDiffer = !Integer.valueOf(maxNodes).equals(nodes.getInteger("max"));
    boolean spotDiffers = spot != null && conf.containsKey("spot_policy") && !spot.equals(conf.getString("spot_policy"));
    Object idle = conf.getValue("idle_duration");
    if (config.dstackWorkers().persistent() && !(idle instanceof Number n && n.intValue() == 0) && !"0s".equals(idle)
        && warnedIdle.add(fleet.name)) {
      // Not changeable in place (fleets.py:1251-1276): said once, for the operator to make the fleet again.
      log.warn("fleet {}: idle_duration is {}, not 0: with persistent worker runs, an instance a stopped idle worker "
          + "run leaves idles that long again (delete the fleet to have it made with 0)", fleet.name, idle);
    }
    if (!nodesDiffer && !spotDiffers || config.amd().fleetDryRun()) {
      return Future.succeededFuture(described);
    }
    JsonObject updated = spec.copy();
    JsonObject updatedConf = updated.getJsonObject("configuration");
    updatedConf.put("nodes", nodes.copy().put("max", maxNodes).put("min", Math.min(nodes.getInteger("min", 0),
        maxNodes)));
    if (spotDiffers) {
      updatedConf.put("spot_policy", spot);
    }
    log.info("fleet {}: updating it in place to the settings (nodes.max {} -> {}, spot_policy {} -> {})", fleet.name,
        nodes.getInteger("max"), maxNodes, conf.getString("spot_policy"), spotDiffers ? spot : conf.getString(
            "spot_policy"));
    return api.applyFleet(updated, described).compose(v -> api.getFleet(fleet.name));
  }

  /** Writes the fleet spec; applies it unless this is a dry run. */
  private Future<JsonObject> create(Fleet fleet) {
    JsonObject spec = fleetSpec(fleetTemplate, config.amd(), fleet.name, config.dstackWorkers().persistent());
    Path file = config.database().dataDir().toAbsolutePath().resolve("dstack").resolve(fleet.name + ".fleet-spec.json");
    return vertx.executeBlocking(() -> {
      Files.createDirectories(file.getParent());
      Files.writeString(file, spec.encodePrettily());
      return file;
    }, false).compose(written -> {
      fleet.configPath = written.toString();
      if (config.amd().fleetDryRun()) {
        log.info("AMD_FLEET_DRY_RUN: fleet {} is missing; its spec was written to {} and not applied:\n{}",
            fleet.name, written, spec.encodePrettily());
        fleet.dryRun = true;
        return Future.succeededFuture(new JsonObject().put("name", fleet.name).put("status", "not_applied"));
      }
      log.info("fleet {} is missing: creating it ({})", fleet.name, written);
      return api.applyFleet(spec, null).compose(created -> api.getFleet(fleet.name));
    });
  }

  // ---- list and health

  /** Every configured fleet; with {@code refresh}, states older than {@link #FLEET_MAX_AGE} are checked first. */
  private Future<JsonObject> list(JsonObject body) {
    List<Future<JsonObject>> checks = new java.util.ArrayList<>();
    if (body.getBoolean("refresh", false)) {
      Instant stale = Instant.now().minus(FLEET_MAX_AGE);
      fleets.values().stream().filter(f -> f.checkedAt == null || f.checkedAt.isBefore(stale))
          .forEach(f -> checks.add(check(f)));
    }
    return Future.join(checks).transform(ar -> Future.succeededFuture(listing()));
  }

  private JsonObject listing() {
    JsonArray all = new JsonArray();
    configured.values().forEach(type -> all.add(fleets.containsKey(type.name()) ? fleets.get(type.name()).toJson()
        : local(type)));
    return new JsonObject().put("fleets", all);
  }

  /** The dstack server (when a GPU type uses it) and each fleet; a stale server check is refreshed first. */
  private Future<JsonObject> health(JsonObject body) {
    if (fleets.isEmpty()) {
      return Future.succeededFuture(new JsonObject().put("dstack", new JsonObject().put("status", "NOT_USED")));
    }
    Duration maxAge = "UP".equals(serverHealth.getString("status")) ? SERVER_CHECK_MAX_AGE : DOWN_CHECK_MAX_AGE;
    Future<JsonObject> serverState = Duration.between(serverCheckedAt, Instant.now()).compareTo(maxAge) > 0
        ? checkServer() : Future.succeededFuture(serverHealth);
    return serverState.transform(ar -> {
      JsonObject fleetStates = new JsonObject();
      fleets.values().forEach(fleet -> fleetStates.put(fleet.name, new JsonObject()
          .put("status", fleet.ready ? "UP" : fleet.checkedAt == null ? "UNKNOWN" : "DOWN")
          .put("fleet_status", fleet.status).put("error", fleet.error).put("last_checked", fleet.checkedText())));
      return Future.succeededFuture(new JsonObject().put("dstack", serverHealth).put("fleets", fleetStates));
    });
  }

  /** The server's version, checked once; a failed check is repeated by the next caller. */
  private Future<JsonObject> serverVersionChecked() {
    return "UP".equals(serverHealth.getString("status")) ? Future.succeededFuture(serverHealth)
        : checkServer().compose(state -> "UP".equals(state.getString("status")) ? Future.succeededFuture(state)
            : Future.failedFuture(state.getString("error")));
  }

  /**
   * {@code server/get_info}, then {@code project/<name>/get}: UP with the version, or DOWN saying why (unreachable,
   * too old, token refused, no such project or not a member of it).
   */
  private Future<JsonObject> checkServer() {
    if (api == null) {
      serverHealth = new JsonObject().put("status", "DOWN").put("error", notConfigured());
      serverCheckedAt = Instant.now();
      return Future.succeededFuture(serverHealth);
    }
    if (serverCheck != null) {
      return serverCheck;
    }
    // The version, then the token and the project: get_info alone would pass a wrong token.
    serverCheck = api.serverVersion().compose(version -> api.projectAccess().map(version))
        .map(version -> new JsonObject().put("status", "UP").put("version", version).put("server", api.serverUrl())
            .put("project", api.project()))
        .recover(error -> Future.succeededFuture(new JsonObject().put("status", "DOWN").put("server", api.serverUrl())
            .put("project", api.project()).put("error", "the dstack server is not usable: " + error.getMessage())))
        .onSuccess(state -> {
          boolean up = "UP".equals(state.getString("status"));
          if (up && !"UP".equals(serverHealth.getString("status"))) {
            log.info("dstack server {} is version {} (project {}, from {})", api.serverUrl(),
                state.getString("version"), api.project(), config.dstack().source());
          } else if (!up && !"DOWN".equals(serverHealth.getString("status"))) {
            log.warn("{}", state.getString("error"));
          }
          serverHealth = state;
          serverCheckedAt = Instant.now();
        })
        .andThen(ar -> serverCheck = null);
    return serverCheck;
  }

  private static String notConfigured() {
    return "dstack is not configured: set DSTACK_SERVER_URL, DSTACK_TOKEN and DSTACK_PROJECT, or add a default "
        + "project to ~/.dstack/config.yml (`dstack project add`)";
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

    /** From {@code fleets/get} (core/models/fleets.py:403-411: status, instances with theirs). */
    void update(JsonObject described) {
      checkedAt = Instant.now();
      status = described.getString("status");
      error = null;
      // Listed by dstack: it exists now (applied by hand after a dry run wrote its spec).
      dryRun &= "not_applied".equals(status);
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
          JsonObject instanceType = instance.getValue("instance_type") instanceof JsonObject type ? type : new JsonObject();
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
          .put("max_nodes", amd.fleetMaxNodes()).put("status", status).put("ready", ready).put("dry_run", dryRun)
          .put("nodes", nodes.copy()).put("error", error).put("config_path", configPath)
          .put("last_checked", checkedText());
    }
  }
}
