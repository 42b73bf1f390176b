package dev.kernelrunner.support;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.vertx.core.json.JsonObject;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The fake dstack server of a test (src/test/resources/dstack/fake_dstack_server.py, built from dstack's source):
 * a real HTTP server on loopback whose containers are real local processes. Its knobs, its state, and the service
 * settings that point the dstack backend at it with the fake agent as the container's program.
 */
public final class FakeDstack implements AutoCloseable {
  public static final Path SCRIPT = Path.of("src/test/resources/dstack/fake_dstack_server.py").toAbsolutePath();
  public static final Path AGENTS = Path.of("src/test/resources/agents").toAbsolutePath();
  public static final String TOKEN = "test-token";

  private final Path home;
  private final Process process;
  private final int port;
  private final HttpClient http = HttpClient.newHttpClient();

  private FakeDstack(Path home, Process process, int port) {
    this.home = home;
    this.process = process;
    this.port = port;
  }

  public static FakeDstack start(JsonObject knobs) throws IOException {
    Path home = TempDirs.directory("fake-dstack");
    Files.writeString(home.resolve("config.json"), knobs.encode());
    Files.createDirectories(home.resolve("echo"));
    Files.createDirectories(home.resolve("tmp"));
    ProcessBuilder builder = new ProcessBuilder("python3", SCRIPT.toString(), home.toString())
        .redirectError(home.resolve("server.log").toFile());
    // The containers (children of the server) write the code they received here (see fake_agent.py).
    builder.environment().put("FAKE_AGENT_ECHO_DIR", home.resolve("echo").toString());
    // Its containers' folders (fake-dstack-run-*) go with the test's own, when the test JVM ends.
    builder.environment().put("TMPDIR", home.resolve("tmp").toString());
    Process process = builder.start();
    BufferedReader out = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
    String line = out.readLine();
    if (line == null || !line.startsWith("LISTENING ")) {
      process.destroyForcibly();
      throw new IOException("the fake dstack server did not start: " + Files.readString(home.resolve("server.log")));
    }
    return new FakeDstack(home, process, Integer.parseInt(line.substring("LISTENING ".length()).trim()));
  }

  /** Replaces the knobs (see KNOBS in the script); read by the server on every request. */
  public void configure(JsonObject knobs) throws IOException {
    Path temp = home.resolve("config.json.tmp");
    Files.writeString(temp, knobs.encode());
    Files.move(temp, home.resolve("config.json"), java.nio.file.StandardCopyOption.ATOMIC_MOVE);
  }

  public Path home() {
    return home;
  }

  /** GET {@code /fake/<what>} (state, delete-fleets). */
  public JsonObject fake(String what) throws IOException, InterruptedException {
    HttpResponse<String> response = http.send(HttpRequest.newBuilder(URI.create(url() + "/fake/" + what)).build(),
        HttpResponse.BodyHandlers.ofString());
    return new JsonObject(response.body());
  }

  /** A call to the server's API as any client would make it. */
  public HttpResponse<String> api(String path, JsonObject body) throws IOException, InterruptedException {
    return api(path, body, TOKEN);
  }

  /** As above, as the user of {@code token} (the knob "other_users" names more). */
  public HttpResponse<String> api(String path, JsonObject body, String token)
      throws IOException, InterruptedException {
    return http.send(HttpRequest.newBuilder(URI.create(url() + path)).header("Authorization", "Bearer " + token)
        .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(body.encode())).build(),
        HttpResponse.BodyHandlers.ofString());
  }

  public String url() {
    return "http://127.0.0.1:" + port;
  }

  /** Service settings: MI300X through this server, the test agent folder as the task's agent, fast polling. */
  public Map<String, String> serviceEnv() throws IOException {
    Path template = home.resolve("task-template.json");
    Files.writeString(template, new JsonObject().put("type", "task").put("image", "rocm/pytorch:test")
        .put("env", new JsonObject().put("PYTHONUNBUFFERED", "1"))
        .put("commands", List.of("cd remote-agent", "exec python3 fake_agent.py --payload ../payload.json"))
        .put("max_duration", "10m").encodePrettily());
    Map<String, String> env = new HashMap<>();
    env.put("DSTACK_SERVER_URL", url());
    env.put("DSTACK_TOKEN", TOKEN);
    env.put("DSTACK_PROJECT", "main");
    env.put("DSTACK_TASK_TEMPLATE", template.toString());
    env.put("DSTACK_AGENT_DIR", AGENTS.toString());
    env.put("DSTACK_POLL_INTERVAL_MS", "100");
    env.put("DSTACK_REQUEST_TIMEOUT_SECONDS", "5");
    env.put("DSTACK_RETRY_BACKOFF_MS", "200");
    env.put("DSTACK_NO_CAPACITY_RETRY_SECONDS", "2");
    env.put("DSTACK_PROVISIONING_TIMEOUT_SECONDS", "60");
    env.put("DSTACK_STOP_GRACE_SECONDS", "2");
    env.put("AMD_FLEET_MAX_NODES", "2");
    env.put("MAX_ACTIVE_PER_USER", "20");
    return env;
  }

  /** Everything the server knows: runs (with their log and whether the container lives), fleets, archives. */
  public JsonObject state() throws IOException, InterruptedException {
    return fake("state");
  }
  /** How many requests of the last 500 went to a path ending in {@code /call} (such as {@code fleets/get}). */
  public long calls(String call) throws IOException, InterruptedException {
    return state().getJsonArray("requests").stream().map(JsonObject.class::cast)
        .filter(request -> request.getString("path").endsWith("/" + call)).count();
  }


  public JsonObject runs() throws IOException, InterruptedException {
    return state().getJsonObject("runs");
  }

  /** Waits until every run is final and no container process is left. */
  public void assertNothingRunning(Duration timeout) throws Exception {
    long deadline = System.nanoTime() + timeout.toNanos();
    JsonObject runs = runs();
    while (System.nanoTime() < deadline) {
      runs = runs();
      boolean settled = runs.stream().allMatch(e -> {
        JsonObject run = (JsonObject) e.getValue();
        Long pid = run.getLong("pid");
        return List.of("terminated", "failed", "done").contains(run.getString("status")) && !run.getBoolean("alive")
            && (pid == null || !Processes.alive(pid));
      });
      if (settled) {
        return;
      }
      Thread.sleep(100);
    }
    for (var entry : runs) {
      JsonObject run = (JsonObject) entry.getValue();
      assertTrue(List.of("terminated", "failed", "done").contains(run.getString("status")),
          entry.getKey() + " is still " + run.getString("status"));
      assertFalse(run.getBoolean("alive"), "the container of " + entry.getKey() + " still runs");
    }
  }

  @Override
  public void close() {
    // TERM: the server kills every container it ran (orphans included) before it exits.
    process.destroy();
    try {
      if (!process.waitFor(10, java.util.concurrent.TimeUnit.SECONDS)) {
        process.destroyForcibly();
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      process.destroyForcibly();
    }
  }
}
