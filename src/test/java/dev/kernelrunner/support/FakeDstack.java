package dev.kernelrunner.support;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.vertx.core.json.JsonObject;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The fake dstack CLI of a test (src/test/resources/dstack/fake_dstack.py): its home folder, its knobs, its
 * state, and the service settings that make the dstack backend use it with the fake agent as the container.
 */
public final class FakeDstack {
  public static final Path SCRIPT = Path.of("src/test/resources/dstack/fake_dstack.py").toAbsolutePath();
  public static final Path AGENTS = Path.of("src/test/resources/agents").toAbsolutePath();

  private final Path home;

  private FakeDstack(Path home) {
    this.home = home;
  }

  public static FakeDstack create(JsonObject knobs) throws IOException {
    FakeDstack fake = new FakeDstack(Files.createTempDirectory("fake-dstack"));
    fake.configure(knobs);
    return fake;
  }

  public void configure(JsonObject knobs) throws IOException {
    JsonObject all = new JsonObject().put("step_seconds", 0.3).mergeIn(knobs);
    Files.writeString(home.resolve("config.json"), all.encode());
  }

  public Path home() {
    return home;
  }

  /** The argv (after {@code env}) that runs this fake as the dstack CLI. */
  public String command() {
    return "env FAKE_DSTACK_HOME=" + home + " python3 " + SCRIPT;
  }

  /** Service settings: MI300X through this fake, the test agent folder as the task's agent, fast polling. */
  public Map<String, String> serviceEnv() throws IOException {
    Path template = home.resolve("task-template.json");
    Files.writeString(template, new JsonObject().put("type", "task").put("image", "rocm/pytorch:test")
        .put("env", new JsonObject().put("PYTHONUNBUFFERED", "1"))
        .put("commands", List.of("cd remote-agent", "python3 fake_agent.py --payload ../payload.json"))
        .put("max_duration", "10m").encodePrettily());
    Map<String, String> env = new HashMap<>();
    env.put("DSTACK_COMMAND", command());
    env.put("DSTACK_TASK_TEMPLATE", template.toString());
    env.put("DSTACK_AGENT_DIR", AGENTS.toString());
    env.put("DSTACK_POLL_INTERVAL_MS", "100");
    env.put("DSTACK_CLI_TIMEOUT_SECONDS", "10");
    env.put("DSTACK_RETRY_BACKOFF_MS", "200");
    env.put("DSTACK_NO_CAPACITY_RETRY_SECONDS", "2");
    env.put("DSTACK_PROVISIONING_TIMEOUT_SECONDS", "60");
    env.put("DSTACK_STOP_GRACE_SECONDS", "2");
    env.put("AMD_FLEET_MAX_NODES", "2");
    env.put("MAX_ACTIVE_PER_USER", "20");
    return env;
  }

  public JsonObject state() throws IOException {
    Path file = home.resolve("state.json");
    return Files.exists(file) ? new JsonObject(Files.readString(file)) : new JsonObject()
        .put("runs", new JsonObject()).put("fleets", new JsonObject());
  }

  public JsonObject runs() throws IOException {
    return state().getJsonObject("runs");
  }

  /** Every call made to the CLI so far, one argv per line. */
  public List<String> calls() throws IOException {
    Path file = home.resolve("calls.log");
    return Files.exists(file) ? Files.readAllLines(file) : List.of();
  }

  /** Runs the fake CLI with {@code args}; its output. */
  public String cli(String... args) throws IOException, InterruptedException {
    List<String> argv = new java.util.ArrayList<>(List.of("python3", SCRIPT.toString()));
    argv.addAll(List.of(args));
    ProcessBuilder builder = new ProcessBuilder(argv).redirectErrorStream(true);
    builder.environment().put("FAKE_DSTACK_HOME", home.toString());
    builder.environment().put("COLUMNS", "400");
    Process process = builder.start();
    String out = new String(process.getInputStream().readAllBytes());
    process.waitFor();
    return out;
  }

  /** Waits until every run of the fake is final and no container process is left. */
  public void assertNothingRunning(Duration timeout) throws Exception {
    long deadline = System.nanoTime() + timeout.toNanos();
    JsonObject runs = runs();
    while (System.nanoTime() < deadline) {
      cli("ps", "-a");
      runs = runs();
      boolean allFinal = runs.stream().allMatch(e -> List.of("terminated", "failed", "done")
          .contains(((JsonObject) e.getValue()).getString("status")));
      boolean noneAlive = runs.stream().map(e -> ((JsonObject) e.getValue()).getLong("pid"))
          .filter(pid -> pid != null).noneMatch(Processes::alive);
      if (allFinal && noneAlive) {
        return;
      }
      Thread.sleep(100);
    }
    for (var entry : runs) {
      JsonObject run = (JsonObject) entry.getValue();
      assertTrue(List.of("terminated", "failed", "done").contains(run.getString("status")),
          entry.getKey() + " is still " + run.getString("status"));
      if (run.getLong("pid") != null) {
        assertFalse(Processes.alive(run.getLong("pid")), "the container of " + entry.getKey() + " still runs");
      }
    }
  }
}
