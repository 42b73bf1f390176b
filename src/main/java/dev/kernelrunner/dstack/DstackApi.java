package dev.kernelrunner.dstack;

import dev.kernelrunner.config.AppConfig;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.client.HttpRequest;
import io.vertx.ext.web.client.HttpResponse;
import io.vertx.ext.web.client.WebClient;
import io.vertx.ext.web.client.WebClientOptions;
import io.vertx.ext.web.multipart.MultipartForm;
import java.net.URI;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * The dstack server's HTTP API, as dstack's own Python client calls it (api/server/_runs.py, _logs.py, _files.py,
 * _fleets.py): {@code POST <server>/api/...} with a JSON body and {@code Authorization: Bearer <token>}, on
 * keep-alive connections, each call with its own timeout. Every call's outcome is timed
 * ({@code kernel_runner_dstack_api_seconds}). Failures are {@link DstackError}s.
 */
public final class DstackApi {
  /**
   * The API this client speaks, sent as {@code X-API-VERSION} (or the server's version where that is older): the
   * server refuses a client whose minor version is newer than its own (server/utils/routers.py:177-199, checked on
   * every route, server/app.py:361-371), and serves clients older than 0.19.27 the legacy working directory
   * (server/routers/runs.py:46-49).
   */
  static final Version CLIENT_VERSION = Version.parse("0.20.0");
  /**
   * File archives in run specs (core/models/runs.py {@code file_archives}, 0.19.27) and a run spec without
   * {@code ssh_key_pub}, which this client never sends: required up to 0.19.32 (core/models/runs.py:464-469 at that
   * tag), optional from 0.19.33.
   */
  static final Version MIN_SERVER_VERSION = Version.parse("0.19.33");
  /** logs/poll takes at most 1000 events a page (server/schemas/logs.py:17). */
  static final int LOG_PAGE = 1000;

  private final WebClient client;
  private final AppConfig.Dstack settings;
  private final URI base;
  private final MeterRegistry meters;
  /** {@code X-API-VERSION} for every call but get_info, known once the server's version is (see {@link #version}). */
  private volatile String apiVersion;
  /** The server-version check that versioned calls wait for; null until asked, or after it failed. */
  private Future<String> versionCheck;
  /** This service's dstack user, once known (see {@link #username}). */
  private volatile String username;

  /** The API of the configured server; null when no server is configured. */
  public static DstackApi ifConfigured(Vertx vertx, AppConfig.Dstack settings, MeterRegistry meters) {
    return settings.configured() ? new DstackApi(vertx, settings, meters) : null;
  }

  private DstackApi(Vertx vertx, AppConfig.Dstack settings, MeterRegistry meters) {
    this.settings = settings;
    this.meters = meters;
    this.base = URI.create(settings.serverUrl());
    int port = base.getPort() > 0 ? base.getPort() : "https".equals(base.getScheme()) ? 443 : 80;
    this.client = WebClient.create(vertx, new WebClientOptions().setDefaultHost(base.getHost()).setDefaultPort(port)
        .setSsl("https".equals(base.getScheme())).setKeepAlive(true)
        .setUserAgent("kernel-runner").setConnectTimeout((int) settings.requestTimeout().toMillis()));
  }

  public String project() {
    return settings.project();
  }

  public String serverUrl() {
    return settings.serverUrl();
  }

  public void close() {
    client.close();
  }

  // ---- server

  /**
   * {@code server/get_info} (server/routers/server.py:13-18): the server's version. Sent without
   * {@code X-API-VERSION} (absent means no check); later calls send the older of ours and the server's. A server
   * older than {@link #MIN_SERVER_VERSION} is refused.
   */
  public Future<String> serverVersion() {
    return call("server/get_info", "/api/server/get_info", new JsonObject(), false).compose(info -> {
      String version = info.getString("server_version");
      Version parsed = version == null ? null : Version.parse(version);
      if (parsed != null && parsed.compareTo(MIN_SERVER_VERSION) < 0) {
        return Future.failedFuture(new DstackError(DstackError.Kind.REJECTED, 200, "the dstack server is version "
            + version + "; this service needs " + MIN_SERVER_VERSION + " or newer"));
      }
      // null or a dev build: the server skips the check (routers.py:186-190), so ours goes as is.
      apiVersion = parsed == null || parsed.compareTo(CLIENT_VERSION) >= 0 ? CLIENT_VERSION.toString() : version;
      return Future.succeededFuture(version == null ? "unknown" : version);
    });
  }

  /**
   * Whether the token is one of the server's and may use the project: {@code project/<name>/get}
   * (server/routers/projects.py:124-131, {@code ProjectMemberOrPublicAccess}, security/permissions.py:123-157: 403
   * "Invalid token", 404 "Not found" for no such project, 403 "Access denied" for a project the user is not in).
   * {@code server/get_info} cannot tell: it takes no token at all (server/routers/server.py:13-19).
   */
  public Future<Void> projectAccess() {
    return call("project/get", projectPath("get"), new JsonObject(), true).mapEmpty();
  }

  /**
   * The version to send, asking the server first if nobody has yet: so that every call carries
   * {@code X-API-VERSION}, never newer than the server's. A failed check is repeated by the next call.
   */
  private Future<String> version() {
    if (apiVersion != null) {
      return Future.succeededFuture(apiVersion);
    }
    if (versionCheck == null) {
      versionCheck = serverVersion().map(v -> apiVersion).onFailure(error -> versionCheck = null);
    }
    return versionCheck;
  }

  // ---- files

  /**
   * The id of an archive with these bytes: {@code files/get_archive_by_hash}, else {@code files/upload_archive}.
   * The upload's file name IS the hash the server files it under, unchecked (server/services/files.py:67), so it is
   * computed here from the bytes.
   */
  public Future<String> archive(byte[] tar) {
    String hash = TarArchive.sha256(tar);
    return call("files/get_archive_by_hash", "/api/files/get_archive_by_hash", new JsonObject().put("hash", hash), true)
        .recover(error -> error instanceof DstackError e && e.kind() == DstackError.Kind.NOT_FOUND
            ? upload(hash, tar) : Future.failedFuture(error))
        .map(archive -> archive.getString("id"));
  }

  private Future<JsonObject> upload(String hash, byte[] tar) {
    MultipartForm form = MultipartForm.create()
        .binaryFileUpload("file", hash, Buffer.buffer(tar), "application/octet-stream");
    return version().compose(v -> timed("files/upload_archive", request("/api/files/upload_archive", v)
        .sendMultipartForm(form))).compose(response -> answer("files/upload_archive", response));
  }

  // ---- runs

  /** {@code runs/apply} with a new run (server/schemas/runs.py:63-70, core/models/runs.py:749-760). */
  public Future<RunSnapshot> applyRun(JsonObject runSpec) {
    JsonObject body = new JsonObject().put("plan", new JsonObject().put("run_spec", runSpec)
        .put("current_resource", (Object) null)).put("force", false);
    return call("runs/apply", projectPath("runs/apply"), body, true).map(RunSnapshot::of);
  }

  /** {@code runs/get} by name; a missing run is {@link DstackError.Kind#NOT_FOUND}. */
  public Future<RunSnapshot> getRun(String runName) {
    return call("runs/get", projectPath("runs/get"), new JsonObject().put("run_name", runName), true)
        .map(RunSnapshot::of);
  }

  /** {@code runs/stop} (schemas/runs.py:73-75); {@code abort} skips the graceful shutdown. */
  public Future<Void> stopRuns(List<String> runNames, boolean abort) {
    return call("runs/stop", projectPath("runs/stop"), new JsonObject().put("runs_names", new JsonArray(runNames))
        .put("abort", abort), true).mapEmpty();
  }

  /**
   * The unfinished runs this service's dstack user made in the project ({@code runs/list} with {@code username},
   * schemas/runs.py:13-35, services/runs/__init__.py:181-330; newest first, pages of at most 100): never another
   * member's, whatever their names.
   */
  public Future<List<RunSnapshot>> activeRuns() {
    return username().compose(user -> activeRuns(user, new ArrayList<>(), null));
  }

  /** This service's dstack user ({@code users/get_my_user}, server/routers/users.py:63-71), asked once. */
  private Future<String> username() {
    if (username != null) {
      return Future.succeededFuture(username);
    }
    return call("users/get_my_user", "/api/users/get_my_user", new JsonObject(), true).compose(user -> {
      String name = user.getString("username");
      if (name == null) {
        return Future.failedFuture(new DstackError(DstackError.Kind.REJECTED, 200,
            "users/get_my_user gave no username"));
      }
      username = name;
      return Future.succeededFuture(name);
    });
  }

  private Future<List<RunSnapshot>> activeRuns(String user, List<RunSnapshot> found, JsonObject last) {
    JsonObject body = new JsonObject().put("project_name", settings.project()).put("username", user)
        .put("only_active", true).put("limit", 100).put("job_submissions_limit", 1);
    if (last != null) {
      body.put("prev_submitted_at", last.getString("submitted_at")).put("prev_run_id", last.getString("id"));
    }
    return callArray("runs/list", "/api/runs/list", body).compose(page -> {
      page.forEach(run -> found.add(RunSnapshot.of((JsonObject) run)));
      return page.size() < 100 ? Future.succeededFuture(found)
          : activeRuns(user, found, page.getJsonObject(page.size() - 1));
    });
  }

  // ---- logs

  /** One page of a job's log (server/schemas/logs.py:9-17; {@code start_time} exclusive, filelog.py:81). */
  public Future<JsonObject> pollLogs(String runName, String jobSubmissionId, String startTime, String nextToken) {
    JsonObject body = new JsonObject().put("run_name", runName).put("job_submission_id", jobSubmissionId)
        .put("start_time", startTime).put("limit", LOG_PAGE).put("descending", false).put("next_token", nextToken)
        .put("diagnose", false);
    return call("logs/poll", projectPath("logs/poll"), body, true);
  }

  // ---- fleets

  /** {@code fleets/get} by name (schemas/fleets.py:27-29); missing is {@link DstackError.Kind#NOT_FOUND}. */
  public Future<JsonObject> getFleet(String name) {
    return call("fleets/get", projectPath("fleets/get"), new JsonObject().put("name", name), true);
  }

  /**
   * Creates or updates a fleet as {@code dstack apply} does: {@code fleets/get_plan}, then {@code fleets/apply} with
   * the plan's spec (schemas/fleets.py:40-51, core/models/fleets.py:432-441). {@code current}: null to create; to
   * update in place, the fleet as it was (from fleets/get) as {@code current_resource}, without force, so that dstack
   * refuses the update if the fleet changed meanwhile (server/services/fleets.py:1134-1144).
   */
  public Future<JsonObject> applyFleet(JsonObject spec, JsonObject current) {
    return call("fleets/get_plan", projectPath("fleets/get_plan"), new JsonObject().put("spec", spec), true)
        .compose(plan -> call("fleets/apply", projectPath("fleets/apply"), new JsonObject()
            .put("plan", new JsonObject().put("spec", spec).put("current_resource", current))
            .put("force", false), true));
  }

  // ---- secrets (server/routers/secrets.py, since 0.19.17; a project manager's or an admin's)

  /** Sets project secret {@code name} ({@code secrets/create_or_update}, schemas/secrets.py). */
  public Future<Void> putSecret(String name, String value) {
    return call("secrets/create_or_update", projectPath("secrets/create_or_update"),
        new JsonObject().put("name", name).put("value", value), true).mapEmpty();
  }

  /** Deletes project secrets ({@code secrets/delete}; a name that is not there fails it: services/secrets.py:105). */
  public Future<Void> deleteSecrets(List<String> names) {
    return call("secrets/delete", projectPath("secrets/delete"),
        new JsonObject().put("secrets_names", new JsonArray(new ArrayList<>(names))), true).mapEmpty();
  }

  /** Whether this service's user may manage the project's secrets: {@code secrets/list} answers (403 if not). */
  public Future<Void> secretsAccess() {
    return callArray("secrets/list", projectPath("secrets/list"), new JsonObject()).mapEmpty();
  }

  // ---- plumbing

  private String projectPath(String call) {
    return "/api/project/" + settings.project() + "/" + call;
  }

  /** A POST to {@code path}; with {@code version} (null: none, only for get_info) as {@code X-API-VERSION}. */
  private HttpRequest<Buffer> request(String path, String version) {
    String prefix = base.getPath() == null ? "" : base.getPath().replaceAll("/+$", "");
    HttpRequest<Buffer> request = client.post(prefix + path).bearerTokenAuthentication(settings.token())
        .timeout(settings.requestTimeout().toMillis());
    if (version != null) {
      request.putHeader("X-API-VERSION", version);
    }
    return request;
  }

  private Future<JsonObject> call(String name, String path, JsonObject body, boolean versioned) {
    return (versioned ? version() : Future.<String>succeededFuture(null))
        .compose(v -> timed(name, request(path, v).sendJsonObject(body)))
        .compose(response -> answer(name, response));
  }

  private Future<JsonArray> callArray(String name, String path, JsonObject body) {
    return version().compose(v -> timed(name, request(path, v).sendJsonObject(body))).compose(response -> {
      if (response.statusCode() / 100 != 2) {
        return Future.failedFuture(DstackError.of(name, response.statusCode(), response.bodyAsString()));
      }
      return Future.succeededFuture(response.bodyAsJsonArray());
    });
  }

  private static Future<JsonObject> answer(String name, HttpResponse<Buffer> response) {
    if (response.statusCode() / 100 != 2) {
      return Future.failedFuture(DstackError.of(name, response.statusCode(), response.bodyAsString()));
    }
    Buffer body = response.body();
    try {
      return Future.succeededFuture(body == null || body.length() == 0 || "null".equals(body.toString().trim())
          ? new JsonObject() : body.toJsonObject());
    } catch (RuntimeException e) {
      return Future.failedFuture(new DstackError(DstackError.Kind.SERVER, response.statusCode(),
          "dstack " + name + " answered something that is not a JSON object"));
    }
  }

  /** Times the call and turns transport failures into {@link DstackError.Kind#UNREACHABLE}. */
  private Future<HttpResponse<Buffer>> timed(String name, Future<HttpResponse<Buffer>> call) {
    long started = System.nanoTime();
    return call.transform(ar -> {
      String outcome;
      Future<HttpResponse<Buffer>> result;
      if (ar.succeeded()) {
        int status = ar.result().statusCode();
        outcome = status / 100 == 2 ? "ok" : status >= 500 ? "server_error" : "client_error";
        result = Future.succeededFuture(ar.result());
      } else {
        outcome = "unreachable";
        result = Future.failedFuture(new DstackError(DstackError.Kind.UNREACHABLE, 0, "dstack " + name
            + ": no answer from " + settings.serverUrl() + " (" + ar.cause().getMessage() + ")"));
      }
      Timer.builder("kernel_runner_dstack_api_seconds").description("calls to the dstack server's HTTP API")
          .tag("call", name).tag("outcome", outcome).register(meters)
          .record(System.nanoTime() - started, TimeUnit.NANOSECONDS);
      return result;
    });
  }

  /** A dstack version such as {@code 0.20.3} (pre-release and local parts ignored). */
  record Version(int major, int minor, int patch) implements Comparable<Version> {
    static Version parse(String text) {
      String[] parts = text.trim().split("[^0-9]+", -1);
      int[] numbers = new int[3];
      int found = 0;
      for (String part : parts) {
        if (!part.isEmpty() && found < 3) {
          numbers[found++] = Integer.parseInt(part);
        }
      }
      return found == 0 ? null : new Version(numbers[0], numbers[1], numbers[2]);
    }

    @Override
    public int compareTo(Version other) {
      int c = Integer.compare(major, other.major);
      c = c != 0 ? c : Integer.compare(minor, other.minor);
      return c != 0 ? c : Integer.compare(patch, other.patch);
    }

    @Override
    public String toString() {
      return major + "." + minor + "." + patch;
    }
  }
}
