package dev.kernelrunner.http;

import dev.kernelrunner.bus.Addresses;
import dev.kernelrunner.bus.Bus;
import dev.kernelrunner.supervisor.LocalWorkersVerticle;
import dev.kernelrunner.workers.MachineKey;
import dev.kernelrunner.workers.WorkerProtocol;
import io.vertx.core.Vertx;
import io.vertx.core.eventbus.EventBus;
import io.vertx.core.eventbus.MessageConsumer;
import io.vertx.core.http.HttpServerResponse;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.Router;
import io.vertx.ext.web.RoutingContext;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.regex.Pattern;

/**
 * The worker API (worker tokens only): a worker's job stream (SSE: {@code hello}, then {@code job}, {@code cancel},
 * {@code drop}, {@code replaced}) and the posts of its jobs' lines and exits. Requests become
 * {@link WorkerProtocol} messages to the worker hub; the hub's pushes for a stream come on its own address.
 */
final class WorkerApi {
  static final String PREFIX = "/api/worker/";
  private static final Pattern WORKER_ID = Pattern.compile("[A-Za-z0-9_.:@-]{1,128}");
  private static final Pattern GPU_TYPE = Pattern.compile("[A-Za-z0-9][A-Za-z0-9_.-]{0,62}");
  private static final Pattern JOB_ID = Pattern.compile("[0-9a-f-]{36}\\.[0-9a-f]{8}");
  private static final Pattern LABEL = Pattern.compile("[\\p{Print}]{0,200}");
  private static final int MAX_TAIL_LINES = 200;
  /** The header of a job stream's machine proof (see {@link MachineKey}). */
  static final String PROOF = "X-Machine-Proof";

  private final Vertx vertx;
  private final EventBus bus;
  private final Duration heartbeat;
  /** This host's own GPU types ({@code LOCAL_GPU_TYPES}): served by the service's own workers only. */
  private final List<String> localTypes;

  WorkerApi(Vertx vertx, Duration heartbeat, List<String> localTypes) {
    this.vertx = vertx;
    this.bus = vertx.eventBus();
    this.heartbeat = heartbeat;
    this.localTypes = List.copyOf(localTypes);
  }

  void install(Router router) {
    router.get(PREFIX + "stream").handler(this::stream);
    router.post(PREFIX + "enroll").handler(this::enroll);
    router.post(PREFIX + "jobs/:job/lines").handler(this::lines);
    router.post(PREFIX + "jobs/:job/exit").handler(this::exit);
    router.get("/api/admin/workers").handler(ctx -> Bus.request(bus, Addresses.WORKERS_LIST, new JsonObject())
        .onSuccess(list -> ApiError.send(ctx, 200, list)).onFailure(error -> ApiError.fromFailure(ctx, error)));
    // Lets a quarantined worker's machine have jobs again (admin only, as every /api/admin/ route).
    router.post("/api/admin/workers/:id/release").handler(ctx -> Bus.request(bus, Addresses.WORKERS_RELEASE,
            new JsonObject().put("worker_id", ctx.pathParam("id")))
        .onSuccess(reply -> ApiError.send(ctx, 200, reply)).onFailure(error -> ApiError.fromFailure(ctx, error)));
  }

  private void stream(RoutingContext ctx) {
    JsonArray errors = new JsonArray();
    String workerId = param(ctx, "worker_id", WORKER_ID, true, "1 to 128 of letters, digits, '_', '.', ':', '@' or '-'", errors);
    String gpuType = param(ctx, "gpu_type", GPU_TYPE, true, "a GPU type name such as MI300X", errors);
    String host = param(ctx, "host", LABEL, false, "at most 200 printable characters", errors);
    String device = param(ctx, "device", LABEL, false, "at most 200 printable characters", errors);
    String holding = param(ctx, "job", JOB_ID, false, "a job id the service gave this worker", errors);
    if (!errors.isEmpty()) {
      ApiError.validation(ctx, 400, errors);
      return;
    }
    String refused = outOfScope(ctx, gpuType);
    if (refused != null) {
      ApiError.send(ctx, 403, new JsonObject().put("error", "out_of_scope").put("message", refused)
          .put("gpu_type", gpuType).put("pool", token(ctx).pool()));
      return;
    }
    Principal.Pool pool = ((Principal) ctx.get(HttpVerticle.PRINCIPAL)).pool();
    if (pool.machine() != null && !pool.machine().proves(ctx.request().getHeader(PROOF), workerId,
        System.currentTimeMillis() / 1000)) {
      ApiError.send(ctx, 401, "machine_proof", "this token is bound to a machine (key " + pool.machine().fingerprint()
          + "): the stream opens only with that machine's proof (" + PROOF + ")");
      return;
    }
    if (pool.machine() == null && pool.trusted()) {
      ApiError.send(ctx, 403, "not_enrolled", "a trusted pool's token serves no job before a machine enrolls with it"
          + " (POST " + PREFIX + "enroll; the worker does at its start)");
      return;
    }
    String connectionId = UUID.randomUUID().toString();
    HttpServerResponse response = ctx.response();
    List<WorkerProtocol.Push> early = new ArrayList<>();
    boolean[] open = {false};
    boolean[] closed = {false};
    long[] timer = {-1};
    MessageConsumer<WorkerProtocol.Push> consumer = bus.consumer(WorkerProtocol.pushAddress(connectionId));
    Runnable cleanup = () -> {
      if (closed[0]) {
        return;
      }
      closed[0] = true;
      vertx.cancelTimer(timer[0]);
      consumer.unregister();
      bus.send(Addresses.WORKERS_DISCONNECT, new WorkerProtocol.Disconnect(connectionId));
    };
    consumer.handler(message -> {
      WorkerProtocol.Push push = message.body();
      if (!open[0]) {
        early.add(push); // pushed while the hub answered the connect: sent right after hello
      } else {
        write(response, push, cleanup);
      }
    });
    WorkerProtocol.Connect connect = new WorkerProtocol.Connect(connectionId, token(ctx), workerId, gpuType, host,
        device, holding);
    consumer.completion().compose(v -> bus.<JsonObject>request(Addresses.WORKERS_CONNECT, connect))
        .onSuccess(reply -> {
          if (ctx.request().connection() == null || response.closed()) {
            cleanup.run();
            return;
          }
          response.setChunked(true).putHeader("Content-Type", "text/event-stream; charset=utf-8")
              .putHeader("Cache-Control", "no-store").putHeader("X-Accel-Buffering", "no");
          response.closeHandler(v -> cleanup.run());
          response.exceptionHandler(e -> cleanup.run());
          response.write("event: hello\ndata: " + reply.body().encode() + "\n\n");
          open[0] = true;
          early.forEach(push -> write(response, push, cleanup));
          timer[0] = vertx.setPeriodic(heartbeat.toMillis(), t -> {
            if (!response.closed()) {
              response.write(": heartbeat\n\n");
            }
          });
        })
        .onFailure(error -> {
          closed[0] = true;
          consumer.unregister();
          ApiError.fromFailure(ctx, error);
        });
  }

  /**
   * Binds this request's token to the machine key in the body ({@code machine_key}: base64 of 32 bytes or more),
   * the first time; again with the same key is harmless; another key is refused (409) until an admin frees it.
   */
  private void enroll(RoutingContext ctx) {
    JsonObject body = body(ctx);
    if (body == null) {
      return;
    }
    MachineKey key = MachineKey.parse(body.getValue("machine_key") instanceof String text ? text : null);
    if (key == null) {
      ApiError.validation(ctx, 400, new JsonArray().add(ApiError.field("machine_key",
          "base64 of 32 random bytes or more, kept on the machine")));
      return;
    }
    Bus.request(bus, Addresses.STORE_TOKEN_BIND, new JsonObject().put("id", token(ctx).id())
            .put("machine_key", key.base64()))
        .onSuccess(bound -> ApiError.send(ctx, 200, bound.put("fingerprint", key.fingerprint())))
        .onFailure(error -> ApiError.fromFailure(ctx, error));
  }

  private static void write(HttpServerResponse response, WorkerProtocol.Push push, Runnable cleanup) {
    if (response.closed()) {
      return;
    }
    response.write("event: " + push.event() + "\ndata: " + push.data().encode() + "\n\n");
    if ("replaced".equals(push.event()) || "revoked".equals(push.event())) {
      response.end();
      cleanup.run();
    }
  }

  private void lines(RoutingContext ctx) {
    JsonObject body = body(ctx);
    String job = jobParam(ctx);
    if (body == null || job == null) {
      return;
    }
    JsonArray errors = new JsonArray();
    Integer from = count(body, "from", errors);
    List<String> lines = strings(body, "lines", errors);
    if (!errors.isEmpty()) {
      ApiError.validation(ctx, 400, errors);
      return;
    }
    WorkerProtocol.Lines batch = new WorkerProtocol.Lines(token(ctx).id(), workerId(ctx), job, from, lines);
    bus.<WorkerProtocol.Consumed>request(Addresses.WORKERS_LINES, batch)
        .onSuccess(reply -> ApiError.send(ctx, 200, new JsonObject().put("consumed", reply.body().consumed())))
        .onFailure(error -> ApiError.fromFailure(ctx, error));
  }

  private void exit(RoutingContext ctx) {
    JsonObject body = body(ctx);
    String job = jobParam(ctx);
    if (body == null || job == null) {
      return;
    }
    JsonArray errors = new JsonArray();
    Integer lines = count(body, "lines", errors);
    Object code = body.getValue("exit_code");
    if (code != null && !(code instanceof Integer)) {
      errors.add(ApiError.field("exit_code", "an integer, or null when unknown"));
    }
    List<String> tail = body.containsKey("tail") ? strings(body, "tail", errors) : List.of();
    if (tail.size() > MAX_TAIL_LINES) {
      errors.add(ApiError.field("tail", "at most " + MAX_TAIL_LINES + " lines"));
    }
    if (!errors.isEmpty()) {
      ApiError.validation(ctx, 400, errors);
      return;
    }
    WorkerProtocol.Exit exit = new WorkerProtocol.Exit(token(ctx).id(), workerId(ctx), job, lines,
        (Integer) code, tail);
    bus.<JsonObject>request(Addresses.WORKERS_EXIT, exit)
        .onSuccess(reply -> ApiError.send(ctx, 200, reply.body()))
        .onFailure(error -> ApiError.fromFailure(ctx, error));
  }

  /** The worker posting: named by a header, since one token may serve several workers (one per GPU). */
  private static String workerId(RoutingContext ctx) {
    String id = ctx.request().getHeader("X-Worker-Id");
    return id != null && WORKER_ID.matcher(id).matches() ? id : "";
  }

  private static String jobParam(RoutingContext ctx) {
    String job = ctx.pathParam("job");
    if (!JOB_ID.matcher(job).matches()) {
      ApiError.validation(ctx, 400, new JsonArray().add(ApiError.field("job", "a job id the service gave this worker")));
      return null;
    }
    return job;
  }

  private static JsonObject body(RoutingContext ctx) {
    try {
      JsonObject body = ctx.body().asJsonObject();
      if (body != null) {
        return body;
      }
    } catch (RuntimeException e) {
      // answered below
    }
    ApiError.validation(ctx, 400, new JsonArray().add(ApiError.field("body", "must be a JSON object")));
    return null;
  }

  private static Integer count(JsonObject body, String field, JsonArray errors) {
    Object value = body.getValue(field);
    if (value instanceof Integer n && n >= 0) {
      return n;
    }
    errors.add(ApiError.field(field, "a whole number, 0 or more"));
    return null;
  }

  private static List<String> strings(JsonObject body, String field, JsonArray errors) {
    Object value = body.getValue(field);
    List<String> list = new ArrayList<>();
    if (value instanceof JsonArray array) {
      for (Object item : array) {
        if (!(item instanceof String s)) {
          errors.add(ApiError.field(field, "an array of strings"));
          return List.of();
        }
        list.add(s);
      }
      return list;
    }
    errors.add(ApiError.field(field, "an array of strings"));
    return List.of();
  }

  private static String param(RoutingContext ctx, String name, Pattern pattern, boolean required, String rule,
                              JsonArray errors) {
    String value = ctx.request().getParam(name);
    if (value == null || value.isEmpty()) {
      if (required) {
        errors.add(ApiError.field(name, "required: " + rule));
      }
      return null;
    }
    if (!pattern.matcher(value).matches()) {
      errors.add(ApiError.field(name, rule));
      return null;
    }
    return value;
  }

  /** The worker token of the request (the worker API takes no other). */
  private static WorkerProtocol.Token token(RoutingContext ctx) {
    Principal principal = ctx.get(HttpVerticle.PRINCIPAL);
    Principal.Pool pool = principal.pool();
    return new WorkerProtocol.Token(pool.tokenId(), principal.userId(), pool.name(), pool.trusted());
  }

  /**
   * Why this request's token may not serve {@code gpuType}, or null when it may: a token serves its pool's GPU types
   * (any served by connecting workers when its pool names none), and this host's own types only the service's own
   * workers serve.
   */
  private String outOfScope(RoutingContext ctx, String gpuType) {
    Principal.Pool pool = ((Principal) ctx.get(HttpVerticle.PRINCIPAL)).pool();
    boolean local = localTypes.contains(gpuType);
    if (local != LocalWorkersVerticle.POOL.equals(pool.name())) {
      return local ? "GPU type '" + gpuType + "' is served by this host's own workers only (pool '"
          + LocalWorkersVerticle.POOL + "'); this token is of pool '" + pool.name() + "'"
          : "the pool '" + pool.name() + "' serves this host's own GPU types only";
    }
    if (pool.gpuTypes() != null && !pool.gpuTypes().contains(gpuType)) {
      return "this token's pool '" + pool.name() + "' may serve " + String.join(", ", pool.gpuTypes())
          + ", not GPU type '" + gpuType + "'";
    }
    return null;
  }
}
