package dev.kernelrunner.http;

import dev.kernelrunner.baselines.BaselineSpeedup;
import dev.kernelrunner.bus.Addresses;
import dev.kernelrunner.bus.Bus;
import dev.kernelrunner.bus.Failures;
import dev.kernelrunner.bus.Revocations;
import dev.kernelrunner.config.AppConfig;
import dev.kernelrunner.config.AppConfig.GpuType;
import dev.kernelrunner.leaderboard.FastP;
import dev.kernelrunner.model.BaselineJobs;
import dev.kernelrunner.model.Cancel;
import dev.kernelrunner.model.EventType;
import dev.kernelrunner.model.Queues;
import dev.kernelrunner.store.QuotaUsage;
import dev.kernelrunner.supervisor.LocalWorkersVerticle;
import dev.kernelrunner.workerruns.WorkerRunsVerticle;
import dev.kernelrunner.model.Mode;
import dev.kernelrunner.model.ProfileReport;
import dev.kernelrunner.model.NewSubmission;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.vertx.core.Future;
import io.vertx.core.eventbus.DeliveryOptions;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.VerticleBase;
import io.vertx.core.eventbus.EventBus;
import io.vertx.core.eventbus.Message;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.HttpServer;
import io.vertx.core.http.HttpServerOptions;
import io.vertx.core.http.HttpServerRequest;
import io.vertx.core.json.DecodeException;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.Router;
import io.vertx.ext.web.RoutingContext;
import io.vertx.ext.web.handler.BodyHandler;
import io.vertx.ext.web.handler.StaticHandler;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** The REST API, the SSE streams, health and metrics. */
public class HttpVerticle extends VerticleBase {
  private static final Logger log = LoggerFactory.getLogger(HttpVerticle.class);
  static final String PRINCIPAL = "principal";
  private static final Pattern USER_ID = Pattern.compile("[A-Za-z0-9_.@-]{1,128}");
  private static final Pattern POOL_NAME = Pattern.compile("[A-Za-z0-9_.-]{1,64}");
  private static final Pattern TOKEN_ID = Pattern.compile("[0-9a-f]{16}");
  private static final Duration CREATE_TIMEOUT = Duration.ofSeconds(15);
  private static final Duration BASELINES_TIMEOUT = Duration.ofMinutes(2);

  /** How long after the start a local GPU type may still be without its worker before readiness says so. */
  private static final Duration LOCAL_WORKERS_GRACE = Duration.ofSeconds(15);

  private TokenCache tokens;
  /** Open SSE streams per user (a stream counts from its opening until it ends). */
  private final Map<String, Integer> streamsByUser = new java.util.HashMap<>();

  private final AppConfig config;
  private final Map<String, GpuType> gpuTypes;
  private long started;
  private final PrometheusMeterRegistry meters;
  private final SseMeters sseMeters;
  private ProblemCatalog problems;
  /** The API's description (OpenAPI 3.1), served as it is in the jar. */
  private io.vertx.core.buffer.Buffer openApi;
  private EventBus bus;
  private HttpServer server;

  public HttpVerticle(AppConfig config, Map<String, GpuType> gpuTypes, PrometheusMeterRegistry meters) {
    this.config = config;
    this.gpuTypes = gpuTypes;
    this.meters = meters;
    this.sseMeters = new SseMeters(meters);
  }

  /** The port the server listens on (useful when configured as 0). */
  public int actualPort() {
    return server.actualPort();
  }

  @Override
  public Future<?> start() {
    started = System.nanoTime();
    bus = vertx.eventBus();
    // A token revoked by this instance (an admin, or the service for its own workers) is refused at once.
    tokens = new TokenCache(System::nanoTime, new Revocations(vertx)::seen);
    return vertx.executeBlocking(() -> {
          try (var in = HttpVerticle.class.getClassLoader().getResourceAsStream("openapi.json")) {
            openApi = io.vertx.core.buffer.Buffer.buffer(in.readAllBytes());
          }
          return ProblemCatalog.load(config.agent().problemsDir());
        })
        .compose(catalog -> {
          problems = catalog;
          AppConfig.Http http = config.http();
          server = vertx.createHttpServer(new HttpServerOptions()
              .setIdleTimeout((int) http.idleTimeout().toSeconds()).setIdleTimeoutUnit(TimeUnit.SECONDS)
              .setMaxHeaderSize(16 * 1024)
              // No h2c (no browser speaks it): with it on, a connection is handed over only once its first
              // request is complete (to look for an Upgrade header), so no guard could see a slowloris.
              .setHttp2ClearTextEnabled(false));
          ConnectionGuard guard = new ConnectionGuard(vertx, http, meters);
          Router router = router();
          return server.connectionHandler(guard::onConnection)
              .requestHandler(request -> {
                guard.onRequest(request);
                router.handle(request);
              })
              .listen(http.port(), http.host());
        })
        .onSuccess(s -> log.info("listening on {}:{}", config.http().host(), s.actualPort()));
  }

  @Override
  public Future<?> stop() {
    return server == null ? Future.succeededFuture() : server.close();
  }

  private Router router() {
    Router router = Router.router(vertx);
    get(router, "/health/live").handler(ctx -> json(ctx, 200, new JsonObject().put("status", "UP")));
    get(router, "/health/ready").handler(this::ready);
    get(router, "/metrics").handler(this::metrics);
    get(router, "/openapi.json").handler(ctx -> ctx.response().putHeader("Content-Type", "application/json")
        .putHeader("Cache-Control", "no-cache").end(openApi));

    // Who asks comes first, and the body is read only for a known token: an anonymous client cannot make
    // the service read (and hold) megabytes. API answers are private and change: never stored by a cache.
    router.route("/api/*").handler(ctx -> {
      ctx.response().putHeader("Cache-Control", "no-store");
      ctx.next();
    });
    router.route("/api/*").handler(this::authenticate);
    router.route("/api/*").handler(HttpVerticle::rolesApart);
    router.route("/api/admin/*").handler(HttpVerticle::adminOnly);
    // Room for JSON escaping of the largest allowed code; past this the body is refused unread.
    long bodyLimit = (long) config.http().maxCodeBytes() * 6 + 64 * 1024;
    router.route("/api/*").handler(BodyHandler.create(false).setBodyLimit(bodyLimit));
    new WorkerApi(vertx, config.sse().heartbeat(), List.copyOf(config.local().gpuTypes())).install(router);
    new LeaderboardApi(bus, problems, gpuTypes).install(router);
    router.post("/api/submissions").handler(this::createSubmission);
    get(router, "/api/submissions").handler(this::listSubmissions);
    router.post("/api/submissions/cancel").handler(this::cancelByBody);
    get(router, "/api/submissions/:id").handler(this::getSubmission);
    get(router, "/api/submissions/:id/profile").handler(this::downloadProfile);
    router.get("/api/submissions/:id/events").handler(this::streamEvents);
    router.post("/api/submissions/:id/cancel").handler(ctx -> cancel(ctx, ctx.pathParam("id")));
    router.post("/api/admin/submissions/:id/cancel").handler(ctx -> cancel(ctx, ctx.pathParam("id")));
    router.post("/api/admin/tokens").handler(this::createToken);
    get(router, "/api/admin/tokens").handler(this::listTokens);
    router.delete("/api/admin/tokens/:id").handler(this::revokeToken);
    router.delete("/api/admin/tokens/:id/machine").handler(ctx -> Bus.request(bus, Addresses.STORE_TOKEN_BIND,
            new JsonObject().put("id", ctx.pathParam("id")).putNull("machine_key"))
        .onSuccess(reply -> json(ctx, 200, reply)).onFailure(error -> ApiError.fromFailure(ctx, error)));
    get(router, "/api/problems").handler(this::listProblems);
    get(router, "/api/baselines").handler(ctx -> baselines(ctx, false));
    get(router, "/api/baselines/export").handler(ctx -> baselines(ctx, true));
    router.post("/api/admin/baselines").handler(this::measureBaselines);
    get(router, "/api/problems/:slug").handler(ctx -> problems.get(ctx.pathParam("slug")).ifPresentOrElse(
        problem -> json(ctx, 200, ProblemCatalog.detail(problem)),
        () -> ApiError.send(ctx, 404, "not_found", "no problem '" + ctx.pathParam("slug")
            + "' (see GET /api/problems)")));
    get(router, "/api/gpu-types").handler(this::listGpuTypes);
    get(router, "/api/me").handler(this::me);
    get(router, "/api/fleets").handler(ctx -> Bus.request(bus, Addresses.FLEET_LIST,
            new JsonObject().put("refresh", true), Duration.ofMinutes(5))
        .onSuccess(fleets -> json(ctx, 200, fleets)).onFailure(error -> ApiError.fromFailure(ctx, error)));
    router.post("/api/admin/fleets/:name/ensure").handler(this::ensureFleet);

    // The web client: static files built into the jar; its scripts and styles are files (no inline code), so
    // the page can forbid everything else.
    // The files change with every release under the same names: a browser must check them each time (no-cache),
    // never keep them for good (immutable).
    get(router, "/*").handler(ctx -> {
      ctx.response().putHeader("Content-Security-Policy",
          "default-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'none'; frame-ancestors 'none'");
      ctx.response().putHeader("X-Content-Type-Options", "nosniff");
      ctx.response().putHeader("Cache-Control", "no-cache");
      ctx.next();
    });
    get(router, "/*").handler(StaticHandler.create("web").setIndexPage("index.html").setCachingEnabled(false));

    router.errorHandler(413, ctx -> ApiError.validation(ctx, 413, new JsonArray().add(ApiError.field("code",
        "the request body is larger than this service accepts (code at most " + config.http().maxCodeBytes()
            + " bytes)"))));
    router.errorHandler(404, ctx -> ApiError.send(ctx, 404, "not_found", "no such resource"));
    router.errorHandler(405, ctx -> ApiError.send(ctx, 405, "method_not_allowed", "method not allowed here"));
    // A connection reset while the body is read fails the request with the response's status so far: 200.
    router.errorHandler(200, ctx -> {
      if (!clientGone(ctx)) {
        log.error("request {} {} failed", ctx.request().method(), ctx.request().path(), ctx.failure());
        ApiError.send(ctx, 500, "internal", "internal error");
      }
    });
    router.errorHandler(400, ctx -> {
      if (!clientGone(ctx)) {
        ApiError.send(ctx, 400, "bad_request", "the request could not be read");
      }
    });
    router.errorHandler(500, ctx -> {
      if (clientGone(ctx)) {
        return;
      }
      log.error("request {} {} failed", ctx.request().method(), ctx.request().path(), ctx.failure());
      ApiError.send(ctx, 500, "internal", "internal error");
    });
    return router;
  }

  /** The client left mid-request (an aborted upload): nothing went wrong here, and there is no one to answer. */
  private static boolean clientGone(RoutingContext ctx) {
    if (!ClientGone.is(ctx.failure())) {
      return false;
    }
    log.debug("{} {}: the client went away: {}", ctx.request().method(), ctx.request().path(), ctx.failure());
    return true;
  }

  /** A route for GET and HEAD (the server leaves the body out of a HEAD answer). */
  private static io.vertx.ext.web.Route get(Router router, String path) {
    return router.route(path).method(HttpMethod.GET).method(HttpMethod.HEAD);
  }

  /** Prometheus text format; behind its own bearer token when METRICS_TOKEN is set (scrapers, not users). */
  private void metrics(RoutingContext ctx) {
    String token = config.http().metricsToken();
    if (token != null) {
      String header = ctx.request().getHeader("Authorization");
      String given = header != null && header.regionMatches(true, 0, "Bearer ", 0, 7) ? header.substring(7).trim() : "";
      if (!MessageDigest.isEqual(token.getBytes(StandardCharsets.UTF_8), given.getBytes(StandardCharsets.UTF_8))) {
        ApiError.send(ctx, 401, "unauthorized", "/metrics needs Authorization: Bearer <METRICS_TOKEN>");
        return;
      }
    }
    ctx.response().putHeader("Content-Type", "text/plain; version=0.0.4; charset=utf-8").end(meters.scrape());
  }

  /**
   * 503 only when the database is down (nothing works then). A dstack server or fleet that is not usable, or a
   * local GPU type without its worker, makes the service DEGRADED (200: the rest still works), named in
   * {@code failed}.
   */
  private void ready(RoutingContext ctx) {
    Future<JsonObject> database = Bus.request(bus, Addresses.STORE_PING, new JsonObject(), Duration.ofSeconds(5))
        .map(v -> new JsonObject().put("status", "UP"))
        .otherwise(e -> new JsonObject().put("status", "DOWN").put("error", e.getMessage()));
    Future<JsonObject> dstack = Bus.request(bus, Addresses.FLEET_HEALTH, new JsonObject(), Duration.ofSeconds(10))
        .otherwise(e -> new JsonObject().put("dstack", new JsonObject().put("status", "UNKNOWN")
            .put("error", e.getMessage())));
    List<String> localTypes = config.local().viaWorkers() ? config.local().gpuTypes() : List.of();
    Future<JsonObject> localWorkers = localTypes.isEmpty() ? Future.succeededFuture()
        : Bus.request(bus, Addresses.WORKERS_LIST, new JsonObject(), Duration.ofSeconds(5))
            .map(list -> LocalWorkersHealth.check(localTypes, list.getJsonArray("workers", new JsonArray()),
                Duration.ofNanos(System.nanoTime() - started), LOCAL_WORKERS_GRACE))
            .otherwise(e -> new JsonObject().put("status", "UNKNOWN").put("error", e.getMessage()));
    Future.join(database, dstack, localWorkers).onComplete(ar -> {
      JsonObject checks = new JsonObject().put("database", database.result());
      JsonObject fleetHealth = dstack.result();
      checks.put("dstack", fleetHealth.getJsonObject("dstack"));
      JsonObject fleets = fleetHealth.getJsonObject("fleets", new JsonObject());
      fleets.forEach(entry -> checks.put("fleet:" + entry.getKey(), entry.getValue()));
      if (localWorkers.result() != null) {
        checks.put("local-workers", localWorkers.result());
      }
      JsonArray failed = new JsonArray();
      checks.forEach(entry -> {
        String status = ((JsonObject) entry.getValue()).getString("status");
        if ("DOWN".equals(status)) {
          failed.add(entry.getKey());
        }
      });
      boolean databaseUp = "UP".equals(database.result().getString("status"));
      String status = !databaseUp ? "DOWN" : failed.isEmpty() ? "UP" : "DEGRADED";
      json(ctx, databaseUp ? 200 : 503, new JsonObject().put("status", status)
          .put("database", database.result().getString("status")).put("failed", failed).put("checks", checks));
    });
  }

  // ---- authentication

  private void authenticate(RoutingContext ctx) {
    String header = ctx.request().getHeader("Authorization");
    String token = null;
    if (header != null && header.regionMatches(true, 0, "Bearer ", 0, 7)) {
      token = header.substring(7).trim();
    } else if (header == null && ctx.request().method().name().equals("GET")) {
      // EventSource cannot send headers: streams may carry the token as a query parameter.
      token = ctx.request().getParam("access_token");
    }
    if (token == null || token.isEmpty()) {
      ApiError.send(ctx, 401, "unauthorized", "send Authorization: Bearer <token>");
      return;
    }
    String adminToken = config.http().adminToken();
    if (adminToken != null && MessageDigest.isEqual(adminToken.getBytes(StandardCharsets.UTF_8),
        token.getBytes(StandardCharsets.UTF_8))) {
      ctx.put(PRINCIPAL, new Principal("admin", true));
      ctx.next();
      return;
    }
    TokenCache.Lookup known = tokens.get(token);
    if (known != null) {
      if (known.principal() == null) {
        ApiError.send(ctx, 401, "unauthorized", "unknown token");
        return;
      }
      ctx.put(PRINCIPAL, known.principal());
      ctx.next();
      return;
    }
    String presented = token;
    long revocations = tokens.revocations();
    // The body is not read until the token is known (the body handler comes after): hold it meanwhile.
    HttpServerRequest request = ctx.request();
    boolean paused = !request.isEnded();
    if (paused) {
      request.pause();
    }
    Bus.request(bus, Addresses.STORE_TOKEN_LOOKUP, new JsonObject().put("token", token)).onSuccess(user -> {
      Principal.Role role = Principal.Role.of(user.getString("role"));
      JsonArray types = user.getJsonArray("gpu_types");
      Principal principal = new Principal(user.getString("user_id"), role, role != Principal.Role.WORKER ? null
          : new Principal.Pool(user.getString("id"), user.getString("pool"),
              types == null ? null : types.stream().map(String::valueOf).toList(), user.getBoolean("trusted", false),
              dev.kernelrunner.workers.MachineKey.parse(user.getString("machine_key"))));
      tokens.put(presented, principal, revocations);
      ctx.put(PRINCIPAL, principal);
      ctx.next();
      if (paused) {
        resumeQuietly(request);
      }
    }).onFailure(error -> {
      if (dev.kernelrunner.bus.Failures.code(error) == 404) {
        tokens.putUnknown(presented, revocations);
        ApiError.send(ctx, 401, "unauthorized", "unknown token");
      } else {
        ApiError.fromFailure(ctx, error);
      }
    });
  }

  private static void resumeQuietly(HttpServerRequest request) {
    try {
      request.resume();
    } catch (IllegalStateException e) {
      // Already read in full: nothing was held.
    }
  }

  /**
   * A worker token serves jobs and nothing else; the worker API is for worker tokens only (a user's token there
   * could take other users' jobs, code and inputs). Checked before any body is read.
   */
  private static void rolesApart(RoutingContext ctx) {
    // The path the router matches (dot segments removed: /api/worker/../submissions is /api/submissions).
    boolean workerApi = ctx.normalizedPath().startsWith(WorkerApi.PREFIX);
    if (workerApi != principal(ctx).worker()) {
      ApiError.send(ctx, 403, "forbidden", workerApi ? "the worker API takes worker tokens only"
          : "a worker token can only be used by a worker (" + WorkerApi.PREFIX + ")");
      return;
    }
    ctx.next();
  }

  /** Everything under /api/admin/ is for admins only; checked once, before any body is read. */
  private static void adminOnly(RoutingContext ctx) {
    if (!principal(ctx).admin()) {
      ApiError.send(ctx, 403, "forbidden", "admin only");
      return;
    }
    ctx.next();
  }

  private static Principal principal(RoutingContext ctx) {
    return ctx.get(PRINCIPAL);
  }

  // ---- submissions

  private void createSubmission(RoutingContext ctx) {
    JsonObject body = jsonBody(ctx);
    if (body == null) {
      return;
    }
    SubmissionValidator.Result checked = SubmissionValidator.validate(body, problems, gpuTypes,
        config.http().maxCodeBytes());
    if (!checked.errors().isEmpty()) {
      ApiError.validation(ctx, checked.tooLarge() ? 413 : 400, checked.errors());
      return;
    }
    boolean stream = wantsStream(ctx);
    if (stream && tooManyStreams(ctx)) {
      return;
    }
    NewSubmission request = checked.submission(principal(ctx).userId(), stream);
    cannotRun(gpuTypes.get(request.gpuType())).onSuccess(why -> {
      if (why != null) {
        refuseUnavailable(ctx, request.gpuType(), why);
      } else {
        create(ctx, request, stream);
      }
    });
  }

  /** 503: nothing could run work of {@code gpuType} now; refused now, not accepted to end in ERROR later. */
  private static void refuseUnavailable(RoutingContext ctx, String gpuType, String why) {
    ctx.response().putHeader("Retry-After", "60");
    ApiError.send(ctx, 503, new JsonObject().put("error", "gpu_type_unavailable").put("message", why)
        .put("details", new JsonArray().add(ApiError.field("gpu_type", gpuType + " cannot run now: " + why))));
  }

  /**
   * An admin's request to measure the baselines anew (issue 30): a baseline job per problem and dtype, queued
   * through the normal queue and backends (BaselinesVerticle); 202 with each job's id.
   */
  private void measureBaselines(RoutingContext ctx) {
    JsonObject body = jsonBody(ctx);
    if (body == null) {
      return;
    }
    BaselineRequest.Result checked = BaselineRequest.validate(body, problems, gpuTypes, principal(ctx).userId());
    if (!checked.errors().isEmpty()) {
      ApiError.validation(ctx, 400, checked.errors());
      return;
    }
    BaselineJobs request = checked.jobs();
    cannotRun(gpuTypes.get(request.gpuType())).onSuccess(why -> {
      if (why != null) {
        refuseUnavailable(ctx, request.gpuType(), why);
        return;
      }
      bus.<BaselineJobs.Queued>request(Addresses.BASELINES_MEASURE, request,
          new DeliveryOptions().setSendTimeout(BASELINES_TIMEOUT.toMillis())).map(Message::body).onSuccess(queued -> {
        JsonArray jobs = new JsonArray();
        queued.jobs().forEach(job -> jobs.add(new JsonObject().put("id", job.id()).put("problem", job.problem())
            .put("dtype", job.dtype()).put("events_url", "/api/submissions/" + job.id() + "/events")));
        json(ctx, 202, new JsonObject().put("gpu_type", queued.gpuType()).put("jobs", jobs));
      }).onFailure(error -> ApiError.fromFailure(ctx, error));
    });
  }

  /**
   * Why nothing can run work of {@code type} now, or null: a dstack type while dstack is not configured or not
   * usable (the fleet manager's server check, cached). A worker type with no worker connected can: its work
   * waits in line for the workers the operator configured it for.
   */
  private Future<String> cannotRun(AppConfig.GpuType type) {
    if (type == null || !AppConfig.DSTACK_BACKEND.equals(type.backend())) {
      return Future.succeededFuture(null);
    }
    return dstackHealth().map(HttpVerticle::whyUnusable);
  }

  /** The dstack server's health as the fleet manager last checked it (UNKNOWN, saying why, if it cannot say). */
  private Future<JsonObject> dstackHealth() {
    return Bus.request(bus, Addresses.FLEET_HEALTH, new JsonObject(), Duration.ofSeconds(10))
        .map(health -> health.getJsonObject("dstack", new JsonObject()))
        .otherwise(e -> new JsonObject().put("status", "UNKNOWN").put("error", e.getMessage()));
  }

  /** Why a dstack server in this health takes no work, or null when it is UP. */
  private static String whyUnusable(JsonObject health) {
    return "UP".equals(health.getString("status")) ? null : "dstack is " + health.getString("status", "DOWN") + ": "
        + health.getString("error", health.getString("message", "the dstack server is not usable"));
  }

  private void create(RoutingContext ctx, NewSubmission request, boolean stream) {
    bus.<NewSubmission.Created>request(Addresses.SUBMISSIONS_CREATE, request,
            new DeliveryOptions().setSendTimeout(CREATE_TIMEOUT.toMillis())).map(Message::body).onSuccess(created -> {
      String id = created.id();
      if (stream) {
        openStream(ctx, id, request.mode(), 0, true, false);
      } else {
        ctx.response().putHeader("Location", "/api/submissions/" + id);
        json(ctx, 201, new JsonObject().put("id", id).put("status", created.status())
            .put("position", created.position())
            .put("events_url", "/api/submissions/" + id + "/events"));
      }
    }).onFailure(error -> {
      if (Failures.code(error) == Failures.TOO_MANY) {
        refuseOverQuota(ctx, principal(ctx).userId(), error.getMessage());
      } else {
        ApiError.fromFailure(ctx, error);
      }
    });
  }

  /** 429 naming the quota, with Retry-After: when the limit that refused lets a submission in again. */
  private void refuseOverQuota(RoutingContext ctx, String userId, String fallback) {
    Bus.request(bus, Addresses.STORE_QUOTA_USAGE, quotaQuery(userId)).onComplete(usage -> {
      JsonObject found = usage.succeeded() ? usage.result() : new JsonObject();
      long retryAfter = Math.max(1, found.getLong("retry_after_seconds", 10L));
      String quota = found.getString("refused_by", "max_active");
      // None when a submission ended in between: the quota was full a moment ago.
      String why = found.getString("refusal") != null ? found.getString("refusal") : fallback + "; try again";
      ctx.response().putHeader("Retry-After", String.valueOf(retryAfter));
      json(ctx, 429, new JsonObject().put("error", "max_active".equals(quota) ? "too_many_active" : "quota")
          .put("quota", quota).put("message", why).put("retry_after_seconds", retryAfter));
    });
  }

  /** The quota limits for a user, as the store's usage query takes them. */
  private JsonObject quotaQuery(String userId) {
    return QuotaUsage.Limits.of(config).toJson().put("user_id", userId);
  }

  private static boolean wantsStream(RoutingContext ctx) {
    String accept = ctx.request().getHeader("Accept");
    return accept != null && accept.contains("text/event-stream");
  }

  private void getSubmission(RoutingContext ctx) {
    boolean withCode = "code".equals(ctx.request().getParam("include"));
    owned(ctx, ctx.pathParam("id"), withCode, true).onSuccess(submission -> {
      if (submission == null) {
        return;
      }
      JsonObject result = submission.getJsonObject("result");
      if (result == null || !(result.getValue("test_results") instanceof JsonArray tests)
          || !"BENCHMARKED".equals(submission.getString("status"))) {
        json(ctx, 200, present(submission, principal(ctx)));
        return;
      }
      // Its speedup over PyTorch's own times on its GPU type (eager, torch.compile), where they were measured.
      Bus.request(bus, Addresses.STORE_BASELINES_CURRENT, new JsonObject()
              .put("gpu_type", submission.getString("gpu_type")).put("problem", submission.getString("problem"))
              .put("dtype", submission.getString("dtype")))
          .onSuccess(found -> {
            result.put("baseline_speedups", BaselineSpeedup.all(tests, found.getJsonArray("baselines")));
            json(ctx, 200, present(submission, principal(ctx)));
          })
          .onFailure(error -> ApiError.fromFailure(ctx, error));
    });
  }

  /** The current baselines (GET /api/baselines), or one method's in KernelBench's seed format (/export). */
  private void baselines(RoutingContext ctx, boolean export) {
    String method = ctx.request().getParam("method");
    if (export && !List.of("eager", "torch_compile").contains(String.valueOf(method))) {
      ApiError.validation(ctx, 400, new JsonArray().add(ApiError.field("method", "must be eager or torch_compile")));
      return;
    }
    Bus.request(bus, Addresses.STORE_BASELINES_CURRENT, new JsonObject()
            .put("gpu_type", ctx.request().getParam("gpu_type")).put("problem", ctx.request().getParam("problem"))
            .put("dtype", ctx.request().getParam("dtype")))
        .onSuccess(found -> {
          if (!export) {
            json(ctx, 200, found);
            return;
          }
          JsonObject levels = new JsonObject();
          problems.toJson().forEach(p -> levels.put(((JsonObject) p).getString("slug"),
              ((JsonObject) p).getInteger("level", 1)));
          json(ctx, 200, BaselineSpeedup.seed(found.getJsonArray("baselines"), method, levels));
        })
        .onFailure(error -> ApiError.fromFailure(ctx, error));
  }

  /** A profile-mode submission's report file (Nsight Compute's .ncu-rep, or rocprofv3's CSV files zipped). */
  private void downloadProfile(RoutingContext ctx) {
    String id = ctx.pathParam("id");
    owned(ctx, id, false, false).onSuccess(submission -> {
      if (submission == null) {
        return;
      }
      bus.<ProfileReport>request(Addresses.STORE_PROFILE_GET, new JsonObject().put("submission_id", id))
          .onSuccess(message -> {
            ProfileReport report = message.body();
            ctx.response().putHeader("Content-Type", "application/octet-stream")
                .putHeader("Content-Disposition", "attachment; filename=\"" + id + "-" + report.fileName() + "\"")
                .putHeader("X-Content-SHA256", report.sha256())
                .end(Buffer.buffer(report.content()));
          })
          .onFailure(error -> ApiError.fromFailure(ctx, error));
    });
  }

  /** The submission as the API shows it: the result's headline figures on top, internals only for admins. */
  private static JsonObject present(JsonObject submission, Principal principal) {
    JsonObject result = submission.getJsonObject("result");
    submission.put("avg_runtime_ms", result == null ? null : result.getValue("avg_runtime_ms"));
    submission.put("avg_gflops", result == null ? null : result.getValue("avg_gflops"));
    if (!principal.admin()) {
      submission.remove("pid");
    }
    submission.remove("last_seq");
    // Internals of the backend; the event key is the secret that makes a run's events unforgeable.
    submission.remove("event_key");
    submission.remove("log_position");
    submission.remove("log_offset");
    return submission;
  }

  /** The caller, their quotas and their fast_p over the catalog (or {@code level} of it). */
  private void me(RoutingContext ctx) {
    Integer level = level(ctx);
    if (level == null && ctx.response().ended()) {
      return;
    }
    java.util.Set<String> scope = new java.util.HashSet<>();
    problems.filter(level, null, null).forEach(p -> scope.add(((JsonObject) p).getString("slug")));
    String user = principal(ctx).userId();
    Future<JsonObject> usage = Bus.request(bus, Addresses.STORE_QUOTA_USAGE, quotaQuery(user));
    Future<JsonObject> best = Bus.request(bus, Addresses.STORE_BEST_SPEEDUPS, new JsonObject().put("user_id", user));
    Future.all(usage, best)
        .onSuccess(both -> json(ctx, 200, new JsonObject().put("user_id", user).put("admin", principal(ctx).admin())
            .put("quotas", usage.result().getJsonObject("quotas"))
            .put("fast_p", FastP.all(best.result().getJsonArray("best"), scope).put("level", level))))
        .onFailure(error -> ApiError.fromFailure(ctx, error));
  }

  /** The {@code level} query parameter; null when absent, or when it was refused (400 sent). */
  private static Integer level(RoutingContext ctx) {
    String levelParam = ctx.request().getParam("level");
    if (levelParam == null) {
      return null;
    }
    try {
      return Integer.parseInt(levelParam);
    } catch (NumberFormatException e) {
      ApiError.validation(ctx, 400, new JsonArray().add(ApiError.field("level", "must be a whole number")));
      return null;
    }
  }

  /** The catalog, or the problems of {@code level} with {@code tag} whose text holds {@code q}. */
  private void listProblems(RoutingContext ctx) {
    Integer level = level(ctx);
    if (level == null && ctx.response().ended()) {
      return;
    }
    json(ctx, 200, new JsonObject().put("problems", problems.filter(level, ctx.request().getParam("tag"),
        ctx.request().getParam("q"))));
  }

  private void listSubmissions(RoutingContext ctx) {
    JsonArray errors = new JsonArray();
    int limit = 20;
    String limitParam = ctx.request().getParam("limit");
    if (limitParam != null) {
      try {
        limit = Integer.parseInt(limitParam);
        if (limit < 1 || limit > 200) {
          errors.add(ApiError.field("limit", "must be between 1 and 200"));
        }
      } catch (NumberFormatException e) {
        errors.add(ApiError.field("limit", "must be a whole number"));
      }
    }
    Optional<PageCursor> cursor = cursor(ctx, errors);
    if (!errors.isEmpty()) {
      ApiError.validation(ctx, 400, errors);
      return;
    }
    Principal principal = principal(ctx);
    int pageSize = limit;
    // Filters; an unknown name simply matches nothing (a GPU type no longer served still has history).
    JsonObject query = new JsonObject().put("user_id", principal.admin() ? null : principal.userId())
        .put("limit", limit).put("problem", ctx.request().getParam("problem"))
        .put("gpu_type", ctx.request().getParam("gpu_type"));
    cursor.ifPresent(c -> c.into(query));
    Bus.request(bus, Addresses.STORE_SUBMISSION_LIST, query).onSuccess(reply -> {
      JsonArray page = new JsonArray();
      reply.getJsonArray("submissions").forEach(s -> page.add(present((JsonObject) s, principal)));
      json(ctx, 200, new JsonObject().put("submissions", page)
          .put("next_before", PageCursor.next(page, pageSize, "id")));
    }).onFailure(error -> ApiError.fromFailure(ctx, error));
  }

  /** {@code ?before=}: the {@code next_before} of the previous page. */
  private static Optional<PageCursor> cursor(RoutingContext ctx, JsonArray errors) {
    String before = ctx.request().getParam("before");
    if (before == null) {
      return Optional.empty();
    }
    Optional<PageCursor> cursor = PageCursor.decode(before);
    if (cursor.isEmpty()) {
      errors.add(ApiError.field("before", "must be the next_before of a previous page"));
    }
    return cursor;
  }

  private void streamEvents(RoutingContext ctx) {
    String lastEventId = Optional.ofNullable(ctx.request().getHeader("Last-Event-ID"))
        .orElse(ctx.request().getParam("last_event_id"));
    int after = 0;
    if (lastEventId != null && !lastEventId.isBlank()) {
      try {
        after = Integer.parseInt(lastEventId.trim());
      } catch (NumberFormatException e) {
        after = -1;
      }
      if (after < 0) {
        ApiError.validation(ctx, 400, new JsonArray().add(ApiError.field("last_event_id",
            "must be the id (a non-negative whole number) of the last event received")));
        return;
      }
    }
    int afterSeq = after;
    if (tooManyStreams(ctx)) {
      return;
    }
    owned(ctx, ctx.pathParam("id"), false, false).onSuccess(submission -> {
      if (submission == null) {
        return;
      }
      Mode mode = Mode.parse(submission.getString("mode")).orElse(Mode.BENCHMARK);
      // A result whose times are still being cross-checked has one more event to come (VERIFIED).
      boolean finished = submission.getString("finished_at") != null
          && !EventType.timingPending(submission.getJsonObject("result"));
      if (finished && afterSeq >= submission.getInteger("last_seq", 0)) {
        // Nothing more will ever come: 204 is how the SSE standard tells a client to stop reconnecting (a 200
        // that closes at once has a standard EventSource reconnect for ever).
        ctx.response().setStatusCode(204).putHeader("Cache-Control", "no-cache").end();
        return;
      }
      openStream(ctx, submission.getString("id"), mode, afterSeq, submission.getBoolean("cancel_on_disconnect", false),
          finished);
    });
  }

  /** 429 when the caller already has SSE_MAX_STREAMS_PER_USER streams open (each holds a socket and a consumer). */
  private boolean tooManyStreams(RoutingContext ctx) {
    String user = principal(ctx).userId();
    int max = config.sse().maxStreamsPerUser();
    if (streamsByUser.getOrDefault(user, 0) < max) {
      return false;
    }
    ctx.response().putHeader("Retry-After", "10");
    ApiError.send(ctx, 429, "too_many_streams", "you already have " + max + " event streams open (the limit);"
        + " close one first");
    return true;
  }

  private void openStream(RoutingContext ctx, String id, Mode mode, int afterSeq, boolean cancelOnDisconnect,
                          boolean finished) {
    String user = principal(ctx).userId();
    streamsByUser.merge(user, 1, Integer::sum);
    new EventStream(vertx, ctx.request(), id, mode, afterSeq, cancelOnDisconnect, config.sse(), sseMeters,
        () -> streamsByUser.computeIfPresent(user, (u, n) -> n > 1 ? n - 1 : null)).open(finished);
  }

  /**
   * Loads a submission the caller may see; replies 404 (also for someone else's: no existence leak) or the
   * store's failure, and completes with null when it has replied.
   */
  private Future<JsonObject> owned(RoutingContext ctx, String id, boolean withCode, boolean withResults) {
    JsonObject query = new JsonObject().put("id", id).put("include_code", withCode)
        .put("include_results", withResults);
    return Bus.request(bus, Addresses.STORE_SUBMISSION_GET, query).map(submission -> {
      if (!principal(ctx).mayAccess(submission.getString("user_id"))) {
        ApiError.send(ctx, 404, "not_found", "no submission " + id);
        return null;
      }
      return submission;
    }).recover(error -> {
      ApiError.fromFailure(ctx, error);
      return Future.succeededFuture(null);
    });
  }

  // ---- cancellation

  private void cancelByBody(RoutingContext ctx) {
    JsonObject body = jsonBody(ctx);
    if (body == null) {
      return;
    }
    Object id = body.getValue("submission_id");
    if (!(id instanceof String s) || s.isBlank()) {
      ApiError.validation(ctx, 400, new JsonArray().add(ApiError.field("submission_id", "is required")));
      return;
    }
    cancel(ctx, s);
  }

  private void cancel(RoutingContext ctx, String id) {
    Principal principal = principal(ctx);
    owned(ctx, id, false, false).onSuccess(submission -> {
      if (submission == null) {
        return;
      }
      String status = submission.getString("status");
      Mode mode = Mode.parse(submission.getString("mode")).orElse(Mode.BENCHMARK);
      if (submission.getString("finished_at") != null) {
        replyCancel(ctx, id, status, mode);
        return;
      }
      String reason = principal.userId().equals(submission.getString("user_id")) ? "owner" : "admin";
      bus.<Cancel.Outcome>request(Addresses.TRACKER_CANCEL, new Cancel(id, principal.userId(), reason),
              new DeliveryOptions().setSendTimeout(config.agent().killGrace().plusSeconds(45).toMillis()))
          .onSuccess(reply -> replyCancel(ctx, id, reply.body().status(), mode))
          .onFailure(error -> ApiError.fromFailure(ctx, error));
    });
  }

  /** 202 once cancelled (again: cancelling is idempotent); 409 when it had ended some other way first. */
  private static void replyCancel(RoutingContext ctx, String id, String status, Mode mode) {
    Optional<EventType> type = EventType.parse(status);
    if (type.isPresent() && type.get() != EventType.CANCELLED && type.get().isTerminal(mode)) {
      json(ctx, 409, new JsonObject().put("error", "already_finished").put("id", id).put("status", status)
          .put("message", "the submission had already finished with " + status));
      return;
    }
    json(ctx, 202, new JsonObject().put("id", id).put("status", status));
  }

  // ---- tokens, GPU types

  private void createToken(RoutingContext ctx) {
    JsonObject body = jsonBody(ctx);
    if (body == null) {
      return;
    }
    JsonArray errors = new JsonArray();
    Object role = body.getValue("role", "user");
    // A worker token names the machine it is for; one without a name is just "worker".
    Object user = body.getValue("user_id", "worker".equals(role) ? "worker" : null);
    if (!(user instanceof String s) || !USER_ID.matcher(s).matches()) {
      errors.add(ApiError.field("user_id", "1 to 128 of letters, digits, '_', '.', '@' or '-'"));
    }
    if (!"user".equals(role) && !"admin".equals(role) && !"worker".equals(role)) {
      errors.add(ApiError.field("role", "must be 'user', 'admin' or 'worker'"));
    }
    JsonObject request = new JsonObject().put("user_id", user).put("role", role)
        .put("created_by", principal(ctx).userId());
    if ("worker".equals(role)) {
      request.mergeIn(workerPool(body, errors));
    } else {
      for (String field : List.of("pool", "gpu_types", "trusted")) {
        if (body.containsKey(field)) {
          errors.add(ApiError.field(field, "only a worker token has a pool"));
        }
      }
    }
    if (!errors.isEmpty()) {
      ApiError.validation(ctx, 400, errors);
      return;
    }
    Bus.request(bus, Addresses.STORE_TOKEN_CREATE, request)
        .onSuccess(reply -> {
          JsonObject created = new JsonObject().put("token", reply.getString("token")).put("id", reply.getString("id"))
              .put("user_id", user).put("role", role);
          if ("worker".equals(role)) {
            created.put("pool", request.getValue("pool")).put("gpu_types", request.getValue("gpu_types"))
                .put("trusted", request.getValue("trusted"));
          }
          json(ctx, 201, created);
        })
        .onFailure(error -> ApiError.fromFailure(ctx, error));
  }

  /**
   * A worker token's pool from a create request: {@code pool} (a name, default {@code default}; the service's own
   * are reserved), {@code gpu_types} (the GPU types served by connecting workers it may serve; absent: any of them),
   * {@code trusted} (whether its results may rank; default false). Never this host's own GPU types.
   */
  private JsonObject workerPool(JsonObject body, JsonArray errors) {
    Object pool = body.getValue("pool", "default");
    if (!(pool instanceof String name) || !POOL_NAME.matcher(name).matches()) {
      errors.add(ApiError.field("pool", "1 to 64 of letters, digits, '_', '.' or '-'"));
    } else if (name.equals(LocalWorkersVerticle.POOL) || name.equals(WorkerRunsVerticle.POOL)) {
      errors.add(ApiError.field("pool", "'" + name + "' is the pool of the service's own workers"));
    }
    Object trusted = body.getValue("trusted", false);
    if (!(trusted instanceof Boolean)) {
      errors.add(ApiError.field("trusted", "must be true or false"));
    }
    Object types = body.getValue("gpu_types");
    if (types != null && !(types instanceof JsonArray)) {
      errors.add(ApiError.field("gpu_types", "must be a list of GPU types"));
      types = null;
    }
    if (types != null) {
      List<String> servedByWorkers = config.gpuTypes().values().stream()
          .filter(type -> AppConfig.WORKER_BACKEND.equals(type.backend())).map(AppConfig.GpuType::name)
          .filter(name -> !config.local().gpuTypes().contains(name)).toList();
      for (Object type : (JsonArray) types) {
        if (!(type instanceof String name) || !servedByWorkers.contains(name)) {
          errors.add(ApiError.field("gpu_types", "'" + type + "' is not a GPU type served by connecting workers here "
              + "(" + String.join(", ", servedByWorkers) + ")"));
        }
      }
      if (((JsonArray) types).isEmpty()) {
        errors.add(ApiError.field("gpu_types", "name at least one GPU type (or leave it out: any)"));
      }
    }
    return new JsonObject().put("pool", pool).put("gpu_types", types).put("trusted", trusted);
  }

  private void listTokens(RoutingContext ctx) {
    JsonArray errors = new JsonArray();
    Optional<PageCursor> cursor = cursor(ctx, errors);
    if (!errors.isEmpty()) {
      ApiError.validation(ctx, 400, errors);
      return;
    }
    int pageSize = 100;
    JsonObject query = new JsonObject().put("limit", pageSize);
    cursor.ifPresent(c -> c.into(query));
    Bus.request(bus, Addresses.STORE_TOKEN_LIST, query).onSuccess(reply -> {
      JsonArray page = reply.getJsonArray("tokens");
      String next = PageCursor.next(page, pageSize, "cursor_key");
      page.forEach(token -> ((JsonObject) token).remove("cursor_key"));
      json(ctx, 200, new JsonObject().put("tokens", page).put("next_before", next));
    }).onFailure(error -> ApiError.fromFailure(ctx, error));
  }

  private void revokeToken(RoutingContext ctx) {
    String id = ctx.pathParam("id");
    if (!TOKEN_ID.matcher(id).matches()) {
      ApiError.validation(ctx, 400, new JsonArray().add(ApiError.field("id",
          "must be a token's id (16 hex digits, from GET /api/admin/tokens)")));
      return;
    }
    Bus.request(bus, Addresses.STORE_TOKEN_REVOKE, new JsonObject().put("id", id)).onSuccess(reply -> {
      log.info("token {} of {} revoked by {}", id, reply.getString("user_id"), principal(ctx).userId());
      ctx.response().setStatusCode(204).end();
    }).onFailure(error -> ApiError.fromFailure(ctx, error));
  }

  private void ensureFleet(RoutingContext ctx) {
    Bus.request(bus, Addresses.FLEET_ENSURE, new JsonObject().put("fleet_name", ctx.pathParam("name"))
            .put("force", true), Duration.ofMinutes(10))
        .onSuccess(fleet -> json(ctx, 200, fleet)).onFailure(error -> ApiError.fromFailure(ctx, error));
  }

  /**
   * Each GPU type with its queue; {@code available}: a submission would start now; {@code accepting}: one would be
   * taken at all. A dstack type takes none while the dstack server is not configured or not usable, a worker type
   * with no worker connected queues them ({@code unavailable_reason} says which, and why).
   */
  private void listGpuTypes(RoutingContext ctx) {
    boolean anyDstack = gpuTypes.values().stream().anyMatch(t -> AppConfig.DSTACK_BACKEND.equals(t.backend()));
    Future<JsonObject> dstack = !anyDstack ? Future.succeededFuture(new JsonObject()) : dstackHealth();
    Future<Queues> queues = bus.<Queues>request(Addresses.TRACKER_QUEUES, new Queues.Asked()).map(Message::body);
    Future.all(queues, dstack).map(both -> {
      JsonObject health = dstack.result();
      JsonArray types = new JsonArray();
      gpuTypes.values().forEach(type -> {
        Queues.Queue state = queues.result().byType().getOrDefault(type.name(),
            new Queues.Queue(type.backend(), type.capacity(), 0, 0));
        int capacity = state.capacity();
        boolean free = state.running() < capacity;
        JsonObject entry = new JsonObject().put("name", type.name()).put("backend", type.backend())
            .put("capacity", capacity).put("running", state.running()).put("queued", state.queued());
        String unusable = AppConfig.DSTACK_BACKEND.equals(type.backend()) ? whyUnusable(health) : null;
        if (unusable != null) {
          entry.put("available", false).put("accepting", false).put("unavailable_reason", unusable);
        } else if (capacity == 0 && AppConfig.WORKER_BACKEND.equals(type.backend())) {
          entry.put("available", false).put("accepting", true).put("unavailable_reason",
              "no worker is connected: submissions wait in line until one is");
        } else {
          entry.put("available", free).put("accepting", true);
        }
        types.add(entry);
      });
      return new JsonObject().put("gpu_types", types);
    }).onSuccess(body -> json(ctx, 200, body)).onFailure(error -> ApiError.fromFailure(ctx, error));
  }

  // ---- helpers

  /** The body as a JSON object, or null after replying 400 naming the body. */
  private static JsonObject jsonBody(RoutingContext ctx) {
    try {
      JsonObject body = ctx.body().asJsonObject();
      if (body == null) {
        throw new DecodeException("empty body");
      }
      return body;
    } catch (DecodeException | ClassCastException e) {
      ApiError.validation(ctx, 400, new JsonArray().add(ApiError.field("body", "must be a JSON object")));
      return null;
    }
  }

  private static void json(RoutingContext ctx, int status, JsonObject body) {
    ApiError.send(ctx, status, body);
  }
}
