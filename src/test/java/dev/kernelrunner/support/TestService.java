package dev.kernelrunner.support;

import dev.kernelrunner.App;
import dev.kernelrunner.Metrics;
import dev.kernelrunner.config.AppConfig;
import dev.kernelrunner.config.ConfigLoader;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonObject;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * The whole service, deployed for real on a fresh database of the test cluster, with the fake agent as its
 * local agent, reached over real sockets.
 */
public final class TestService implements AutoCloseable {
  public static final String ADMIN_TOKEN = "test-admin-token";
  public static final Path FAKE_AGENT = TestAgents.path("agents/fake_agent.py");

  private final Vertx vertx;
  private final App app;
  private final AppConfig config;
  private final String databaseUrl;
  private final Path dataDir;
  private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

  private TestService(Vertx vertx, App app, AppConfig config, String databaseUrl, Path dataDir) {
    this.vertx = vertx;
    this.app = app;
    this.config = config;
    this.databaseUrl = databaseUrl;
    this.dataDir = dataDir;
  }

  public static TestService start(Vertx vertx, Map<String, String> overrides) throws Exception {
    return start(vertx, overrides, TestDatabase.freshDatabase(), TempDirs.directory("kr-test"));
  }

  /** Starts on a given database and data directory (a restart of an earlier service). */
  public static TestService start(Vertx vertx, Map<String, String> overrides, String databaseUrl, Path dataDir)
      throws Exception {
    return start(vertx, overrides, databaseUrl, dataDir, Metrics.registry());
  }

  /** Starts with {@code meters}, the registry a {@link Metrics#vertx} instance reports Vert.x's meters into. */
  public static TestService start(Vertx vertx, Map<String, String> overrides, PrometheusMeterRegistry meters)
      throws Exception {
    return start(vertx, overrides, TestDatabase.freshDatabase(), TempDirs.directory("kr-test"), meters);
  }

  private static TestService start(Vertx vertx, Map<String, String> overrides, String databaseUrl, Path dataDir,
                                   PrometheusMeterRegistry meters) throws Exception {
    Map<String, String> env = new HashMap<>();
    env.put("HTTP_HOST", "127.0.0.1");
    env.put("HTTP_PORT", "0");
    env.put("DATA_DIR", dataDir.toString());
    env.put("ADMIN_TOKEN", ADMIN_TOKEN);
    env.put("AGENT_COMMAND", "python3 " + FAKE_AGENT);
    env.put("AGENT_WORKDIR", agentWorkdir(dataDir).toString());
    env.put("PROBLEMS_DIR", Path.of("remote-agent/problems").toAbsolutePath().toString());
    env.put("SSE_HEARTBEAT_SECONDS", "1");
    env.put("DISCONNECT_GRACE_SECONDS", "2");
    env.put("KILL_GRACE_SECONDS", "1");
    env.put("AGENT_ENV", "PYTHONPATH=" + TestAgents.path("remote-agent"));
    env.putAll(overrides);
    AppConfig config = ConfigLoader.load(env);
    App app = App.deploy(vertx, config, databaseUrl, meters).toCompletionStage().toCompletableFuture()
        .get(60, TimeUnit.SECONDS);
    return new TestService(vertx, app, config, databaseUrl, dataDir);
  }

  /**
   * The fake agent's working folder (it writes the code it received there): writable by everyone, since the
   * agent runs as an unprivileged user when the tests run as root.
   */
  public static Path agentWorkdir(Path dataDir) throws IOException {
    Path dir = Files.createDirectories(dataDir.resolve("agent-work"));
    Files.setPosixFilePermissions(dir, java.nio.file.attribute.PosixFilePermissions.fromString("rwxrwxrwx"));
    return dir;
  }

  public int port() {
    return app.httpPort();
  }

  public String databaseUrl() {
    return databaseUrl;
  }

  public Path dataDir() {
    return dataDir;
  }

  public AppConfig config() {
    return config;
  }

  public App app() {
    return app;
  }

  /** The Vert.x instance the service runs on: its event bus, for tests that speak to a verticle directly. */
  public Vertx vertx() {
    return vertx;
  }

  /** A new user token, made through the admin API. */
  public String userToken(String userId) throws Exception {
    Response created = post("/api/admin/tokens", ADMIN_TOKEN, new JsonObject().put("user_id", userId).encode());
    if (created.status() != 201) {
      throw new AssertionError("token creation failed: " + created);
    }
    return created.json().getString("token");
  }

  /** A plain HTTP response. */
  public record Response(int status, String body, Map<String, List<String>> headers) {
    public JsonObject json() {
      return new JsonObject(body);
    }
  }

  public Response get(String path, String token) throws IOException, InterruptedException {
    return send(HttpRequest.newBuilder(uri(path)).GET(), token);
  }

  /** A GET whose body is bytes (a download). */
  public record Download(int status, byte[] body, Map<String, List<String>> headers) {}

  public Download download(String path, String token) throws IOException, InterruptedException {
    HttpRequest.Builder request = HttpRequest.newBuilder(uri(path)).GET().timeout(Duration.ofSeconds(60));
    if (token != null) {
      request.header("Authorization", "Bearer " + token);
    }
    HttpRequest built = request.build();
    HttpResponse<byte[]> response = http.send(built, HttpResponse.BodyHandlers.ofByteArray());
    OpenApiCheck.check(built.method(), built.uri().getRawPath(), response.statusCode(),
        response.headers().firstValue("Content-Type").orElse(null), response.body());
    return new Download(response.statusCode(), response.body(), response.headers().map());
  }

  public Response post(String path, String token, String body) throws IOException, InterruptedException {
    return send(HttpRequest.newBuilder(uri(path)).header("Content-Type", "application/json")
        .POST(HttpRequest.BodyPublishers.ofString(body)), token);
  }

  public Response delete(String path, String token) throws IOException, InterruptedException {
    return send(HttpRequest.newBuilder(uri(path)).DELETE(), token);
  }

  private Response send(HttpRequest.Builder request, String token) throws IOException, InterruptedException {
    if (token != null) {
      request.header("Authorization", "Bearer " + token);
    }
    HttpRequest built = request.timeout(Duration.ofSeconds(60)).build();
    HttpResponse<String> response = http.send(built, HttpResponse.BodyHandlers.ofString());
    OpenApiCheck.check(built.method(), built.uri().getRawPath(), response.statusCode(),
        response.headers().firstValue("Content-Type").orElse(null),
        response.body().getBytes(java.nio.charset.StandardCharsets.UTF_8));
    return new Response(response.statusCode(), response.body(), response.headers().map());
  }

  private URI uri(String path) {
    return URI.create("http://127.0.0.1:" + port() + path);
  }

  /** The sum of the /metrics samples whose line starts with {@code prefix} (name and the labels to match). */
  public double metricSum(String prefix) throws Exception {
    double sum = 0;
    for (String line : get("/metrics", null).body().split("\n")) {
      if (line.startsWith(prefix)) {
        sum += Double.parseDouble(line.substring(line.lastIndexOf(' ') + 1));
      }
    }
    return sum;
  }

  /** Creates a submission without a stream; returns its id. */
  public String submit(String token, String code) throws Exception {
    return submit(token, code, "benchmark");
  }

  public String submit(String token, String code, String mode) throws Exception {
    Response response = post("/api/submissions", token, submission(code, mode).encode());
    if (response.status() != 201) {
      throw new AssertionError("submission refused: " + response);
    }
    return response.json().getString("id");
  }

  public static JsonObject submission(String code, String mode) {
    return new JsonObject().put("problem", "leaky-relu").put("language", "cuda").put("gpu_type", "local")
        .put("dtype", "float32").put("mode", mode).put("code", code);
  }

  public SseClient events(String id, String token, Map<String, String> headers) throws IOException {
    Map<String, String> all = new HashMap<>(headers);
    all.put("Authorization", "Bearer " + token);
    return SseClient.open(port(), "GET", "/api/submissions/" + id + "/events", all, null);
  }

  public SseClient submitStreaming(String token, String code) throws IOException {
    return SseClient.open(port(), "POST", "/api/submissions", Map.of("Authorization", "Bearer " + token),
        submission(code, "benchmark").encode());
  }

  /** The stored submission, as its owner (or the admin) sees it. */
  public JsonObject submission(String id) throws Exception {
    return get("/api/submissions/" + id, ADMIN_TOKEN).json();
  }

  /** Waits until the stored submission's status is {@code status} (fails past {@code timeout}). */
  public void awaitStatus(String id, String status, Duration timeout) throws Exception {
    long deadline = System.nanoTime() + timeout.toNanos();
    while (!status.equals(submission(id).getString("status"))) {
      if (System.nanoTime() > deadline) {
        throw new AssertionError("submission " + id + " never reached " + status + ": " + submission(id));
      }
      Thread.sleep(20);
    }
  }

  /** Waits until the stored submission has finished; returns it. */
  public JsonObject awaitFinished(String id, Duration timeout) throws Exception {
    long deadline = System.nanoTime() + timeout.toNanos();
    while (System.nanoTime() < deadline) {
      JsonObject submission = submission(id);
      if (submission.getString("finished_at") != null) {
        return submission;
      }
      Thread.sleep(50);
    }
    throw new AssertionError("submission " + id + " did not finish within " + timeout + ": " + submission(id));
  }

  /** Stops the verticles (the Vertx instance belongs to the caller). */
  public void stop() throws Exception {
    app.stop().toCompletionStage().toCompletableFuture().get(60, TimeUnit.SECONDS);
  }

  @Override
  public void close() throws Exception {
    stop();
  }
}
