package dev.kernelrunner;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.kernelrunner.support.FakeDstack;
import dev.kernelrunner.support.Ports;
import dev.kernelrunner.support.TempDirs;
import io.vertx.core.json.JsonObject;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * The service as an operator starts it: a real JVM running {@link Main} on its embedded defaults (its own
 * PostgreSQL cluster under DATA_DIR), printing the first admin token once, and stopping its cluster on exit.
 */
class MainProcessTest {
  private static final Pattern TOKEN = Pattern.compile("(kr_[A-Za-z0-9_-]{20,})");

  @Test
  void startsOnEmbeddedDefaultsAndStopsCleanly() throws Exception {
    Path dataDir = TempDirs.directory("kr-main");
    int port = Ports.free();
    String firstToken = runOnce(dataDir, port, true);
    assertNotNull(firstToken, "the first start prints an admin token");
    assertFalse(Files.exists(dataDir.resolve("postgres/postmaster.pid")), "cluster stopped with the service");
    assertEquals(null, runOnce(dataDir, port, false), "the token is printed only once");
  }

  @Test
  void createFleetMakesTheFleetOnceOrOnlyWritesItInADryRun() throws Exception {
    try (FakeDstack fake = FakeDstack.start(new JsonObject())) {
      Path dataDir = TempDirs.directory("kr-fleet");
      Run dry = createFleet(fake, dataDir, "true");
      assertEquals(0, dry.exitCode(), dry.output());
      assertTrue(dry.output().contains("\"dry_run\" : true"), dry.output());
      assertTrue(Files.exists(dataDir.resolve("dstack/amd-mi300x-fleet.fleet-spec.json")));
      assertTrue(fake.state().getJsonObject("fleets").isEmpty(), "a dry run applies nothing");
      Run real = createFleet(fake, dataDir, "false");
      assertEquals(0, real.exitCode(), real.output());
      assertTrue(real.output().contains("\"ready\" : true"), real.output());
      assertEquals(3, fake.state().getJsonObject("fleets").getJsonObject("amd-mi300x-fleet").getJsonObject("spec")
          .getJsonObject("configuration").getJsonObject("nodes").getInteger("max"));
      fake.configure(new JsonObject().put("token", "another"));
      Run broken = createFleet(fake, dataDir, "false");
      assertEquals(1, broken.exitCode(), broken.output());
      assertTrue(broken.output().contains("Invalid token"), broken.output());
    }
  }

  @Test
  void jsonLogsHaveOneLinePerStateChangeWithTheSubmissionId() throws Exception {
    Path dataDir = TempDirs.directory("kr-json");
    int port = Ports.free();
    Path stdout = dataDir.resolve("stdout.log");
    Path stderr = dataDir.resolve("stderr.log");
    Process process = service(dataDir, port, java.util.Map.of("LOG_FORMAT", "json", "ADMIN_TOKEN", "json-admin"))
        .redirectOutput(stdout.toFile()).redirectError(stderr.toFile()).start();
    String id;
    try {
      long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
      while (!Files.readString(stdout).contains("listening") && System.nanoTime() < deadline) {
        Thread.sleep(100);
      }
      id = submit(port, "json-admin", "// agent: ok");
      while (!Files.readString(stderr).contains("is BENCHMARKED") && System.nanoTime() < deadline) {
        Thread.sleep(100);
      }
    } finally {
      process.destroy();
      process.waitFor(60, TimeUnit.SECONDS);
      process.destroyForcibly();
    }
    List<JsonObject> lines = new ArrayList<>();
    for (String line : Files.readAllLines(stderr)) {
      lines.add(new JsonObject(line));
    }
    List<String> changes = lines.stream().filter(l -> l.getJsonArray("kvpList") != null)
        .filter(l -> l.getJsonArray("kvpList").encode().contains(id))
        .map(l -> l.getString("formattedMessage")).toList();
    assertEquals(7, changes.size(), "created (IN_QUEUE), PROVISIONING, COMPILING, CHECKING, CHECKED, BENCHMARKING,"
        + " BENCHMARKED: " + changes);
    assertTrue(changes.get(0).contains("created"), changes.toString());
    assertTrue(changes.get(changes.size() - 1).contains("is BENCHMARKED"), changes.toString());
    assertTrue(lines.stream().anyMatch(l -> id.equals(l.getJsonObject("mdc", new JsonObject()).getString("submission_id"))
        && !l.getString("loggerName").contains("tracker")),
        "the id travels with bus messages into other verticles' log lines");
  }

  /** A second start on the same DATA_DIR says who holds it and leaves the first one's work alone. */
  @Test
  void aSecondInstanceOnTheSameDataDirExitsWithoutTouchingTheFirst() throws Exception {
    Path dataDir = TempDirs.directory("kr-twice");
    int port = Ports.free();
    Process first = startMain(dataDir, port, java.util.Map.of("ADMIN_TOKEN", "twice-admin"));
    try {
      awaitListening(first);
      Run second = runMain(dataDir, Ports.free(), java.util.Map.of());
      assertEquals(1, second.exitCode(), second.output());
      assertTrue(second.output().contains("another kernel-runner is using DATA_DIR"), second.output());
      assertTrue(second.output().contains("pid " + first.pid()), "names the holder: " + second.output());
      assertFalse(second.output().contains("Exception"), second.output());
      HttpResponse<String> ready = HttpClient.newHttpClient().send(HttpRequest.newBuilder(
          URI.create("http://127.0.0.1:" + port + "/health/ready")).build(), HttpResponse.BodyHandlers.ofString());
      assertEquals(200, ready.statusCode(), "the first instance and its database are untouched: " + ready.body());

      Run busy = runMain(TempDirs.directory("kr-busy"), port, java.util.Map.of());
      assertEquals(1, busy.exitCode(), busy.output());
      assertTrue(busy.output().contains("cannot listen on 127.0.0.1:" + port), busy.output());
      assertFalse(busy.output().contains("\tat "), "one line, no stack trace: " + busy.output());
    } finally {
      first.destroy();
      first.waitFor(60, TimeUnit.SECONDS);
      first.destroyForcibly();
    }
  }

  /**
   * What submitted code sees from inside the agent: none of the service's secrets in its environment, and, when
   * the service runs as root, another user who can read neither the database password nor the service's
   * environment.
   */
  @Test
  void theAgentSeesNoSecretOfTheService() throws Exception {
    Path dataDir = TempDirs.directory("kr-snoop");
    int port = Ports.free();
    boolean root = "root".equals(System.getProperty("user.name"));
    Process service = startMain(dataDir, port, java.util.Map.of("ADMIN_TOKEN", "secret-admin-token",
        "METRICS_TOKEN", "secret-metrics-token", "KR_CANARY", "secret-canary", "HTTP_HOST", "0.0.0.0"));
    try {
      List<String> startup = awaitListening(service);
      String log = String.join("\n", startup);
      assertTrue(log.contains("port " + port + " of every interface"), log);
      assertEquals("rw-------", java.nio.file.attribute.PosixFilePermissions.toString(
          Files.getPosixFilePermissions(dataDir.resolve("postgres.password"))), "the password file is the service's");
      if (root) {
        assertTrue(log.contains("running as root and listening on every interface"), log);
        assertTrue(log.contains("agents run as the unprivileged user 'kernel-runner-agent'"), log);
      } else {
        assertTrue(log.contains("agents run as this service's own user"), log);
      }
      String id = submit(port, "secret-admin-token", "// agent: snoop");
      JsonObject submission = awaitSubmission(port, "secret-admin-token", id, s -> s.getString("finished_at") != null);
      assertEquals("COMPILE_ERROR", submission.getString("status"), submission.encode());
      JsonObject seen = new JsonObject(submission.getJsonObject("error").getString("details"));
      JsonObject env = seen.getJsonObject("env");
      for (String name : env.fieldNames()) {
        // PYTHONPATH is this test's AGENT_ENV; a local worker's job also has its slot's GPU and that GPU's timing gate
        // (the path of a flag file: remote-agent/remote_agent/gate.py).
        assertTrue(java.util.Set.of("PATH", "LANG", "LC_ALL", "TZ", "LD_LIBRARY_PATH", "HOME", "PYTHONUNBUFFERED",
            "PYTHONDONTWRITEBYTECODE", "PYTHONNOUSERSITE", "KERNEL_RUNNER_SUBMISSION_ID", "PWD", "PYTHONPATH", "CUDA_VISIBLE_DEVICES",
            "HIP_VISIBLE_DEVICES", "KR_TIMING_GATE").contains(name),
            "only an explicit environment reaches the agent, not " + name + ": " + env.encode());
      }
      String everything = seen.encode();
      for (String secret : java.util.List.of("secret-admin-token", "secret-metrics-token", "secret-canary")) {
        assertFalse(everything.contains(secret), "the agent saw " + secret + ": " + everything);
      }
      if (root) {
        assertTrue(seen.getInteger("uid") != 0, "the agent runs as another user: " + everything);
        JsonObject reads = seen.getJsonObject("reads");
        assertEquals("PermissionError", reads.getString(seen.getString("data_dir") + "/postgres.password"), everything);
        assertTrue(reads.fieldNames().stream().filter(f -> f.endsWith("/environ"))
            .allMatch(f -> "PermissionError".equals(reads.getValue(f))), "the service's environment: " + everything);
      }
    } finally {
      service.destroy();
      service.waitFor(60, TimeUnit.SECONDS);
      service.destroyForcibly();
    }
  }

  /**
   * Issue 27's kill -9: the service killed outright (SIGKILL: no shutdown hook runs; its PostgreSQL cluster, its
   * local worker and the agent that would have sent the verdict are left behind) while a result's timing verdict
   * is still to come. What it started stops by itself (its local worker, told the service's pid, ends its job and
   * itself), and the service started next on the same DATA_DIR takes the cluster over, refuses the killed one's
   * worker token, records the verdict as never checked, and the submission is finished.
   */
  @Test
  void aServiceKilledWhileAVerdictIsPendingFinishesTheSubmissionOnItsNextStart() throws Exception {
    Path dataDir = TempDirs.directory("kr-kill");
    int port = Ports.free();
    java.util.Map<String, String> env = java.util.Map.of("ADMIN_TOKEN", "kill-admin");
    String id;
    List<ProcessHandle> left;
    Process first = startMain(dataDir, port, env);
    try {
      awaitListening(first);
      id = submit(port, "kill-admin", "// agent: ok\n// delay: 0.02\n// timing: verified\n// verdict-after: 120");
      awaitSubmission(port, "kill-admin", id, s -> "pending".equals(timingStatus(s)));
    } finally {
      left = first.descendants().toList();
      first.destroyForcibly(); // SIGKILL
      first.waitFor(60, TimeUnit.SECONDS);
    }
    assertTrue(left.stream().anyMatch(p -> p.info().commandLine().orElse("").contains("remote_agent worker")),
        "a local worker ran: " + left.stream().map(p -> p.info().commandLine().orElse("?")).toList());
    long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
    while (left.stream().anyMatch(ProcessHandle::isAlive) && System.nanoTime() < deadline) {
      Thread.sleep(100);
    }
    assertEquals(List.of(), left.stream().filter(ProcessHandle::isAlive)
        .map(p -> p.pid() + " " + p.info().commandLine().orElse("?")).toList(), "what the killed service started");
    Process second = startMain(dataDir, port, env);
    try {
      awaitListening(second);
      JsonObject done = awaitSubmission(port, "kill-admin", id, s -> "not_checked".equals(timingStatus(s)));
      assertEquals("BENCHMARKED", done.getString("status"), done.encode());
      assertNotNull(done.getString("finished_at"), done.encode());
    } finally {
      second.destroy();
      second.waitFor(60, TimeUnit.SECONDS);
      second.destroyForcibly();
    }
  }

  private static String timingStatus(JsonObject submission) {
    JsonObject result = submission.getJsonObject("result");
    JsonObject verification = result == null ? null : result.getJsonObject("verification");
    JsonObject timing = verification == null ? null : verification.getJsonObject("timing");
    return timing == null ? null : timing.getString("status");
  }

  /** The submission once {@code done} says so (60 s at most). */
  private static JsonObject awaitSubmission(int port, String token, String id,
                                            java.util.function.Predicate<JsonObject> done) throws Exception {
    HttpClient http = HttpClient.newHttpClient();
    JsonObject submission = null;
    long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
    while (System.nanoTime() < deadline) {
      HttpResponse<String> got = http.send(HttpRequest.newBuilder(
              URI.create("http://127.0.0.1:" + port + "/api/submissions/" + id))
          .header("Authorization", "Bearer " + token).build(), HttpResponse.BodyHandlers.ofString());
      submission = got.statusCode() == 200 ? new JsonObject(got.body()) : null;
      if (submission != null && done.test(submission)) {
        return submission;
      }
      Thread.sleep(100);
    }
    throw new AssertionError("not reached in 60 s: " + (submission == null ? null : submission.encode()));
  }

  private static Process startMain(Path dataDir, int port, java.util.Map<String, String> env) throws Exception {
    return service(dataDir, port, env).redirectErrorStream(true).start();
  }

  /** A leaky-relu submission of {@code code} to the service on {@code port}; its id (201 asserted). */
  private static String submit(int port, String token, String code) throws Exception {
    HttpResponse<String> created = HttpClient.newHttpClient().send(HttpRequest.newBuilder(
            URI.create("http://127.0.0.1:" + port + "/api/submissions"))
        .header("Authorization", "Bearer " + token)
        .POST(HttpRequest.BodyPublishers.ofString(new JsonObject().put("problem", "leaky-relu").put("language", "cuda")
            .put("gpu_type", "local").put("dtype", "float32").put("code", code).encode())).build(),
        HttpResponse.BodyHandlers.ofString());
    assertEquals(201, created.statusCode(), created.body());
    return new JsonObject(created.body()).getString("id");
  }

  /** {@link Main} in a JVM of its own with {@code args}. */
  private static ProcessBuilder mainProcess(String... args) {
    List<String> argv = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
        "-cp", System.getProperty("java.class.path"), Main.class.getName()));
    argv.addAll(List.of(args));
    return new ProcessBuilder(argv);
  }

  /** The service on its embedded database under {@code dataDir}, on 127.0.0.1:{@code port}, with the fake agent. */
  private static ProcessBuilder service(Path dataDir, int port, java.util.Map<String, String> env) throws Exception {
    ProcessBuilder builder = mainProcess();
    builder.environment().remove("DATABASE_URL");
    builder.environment().put("DATA_DIR", dataDir.toString());
    builder.environment().put("HTTP_PORT", String.valueOf(port));
    builder.environment().put("HTTP_HOST", "127.0.0.1");
    builder.environment().put("AGENT_COMMAND", "python3 " + dev.kernelrunner.support.TestService.FAKE_AGENT);
    builder.environment().put("AGENT_WORKDIR", dev.kernelrunner.support.TestService.agentWorkdir(dataDir).toString());
    // The local worker (python3 -m remote_agent worker) runs in AGENT_WORKDIR, a scratch folder here.
    builder.environment().put("AGENT_ENV", "PYTHONPATH=" + dev.kernelrunner.support.TestAgents.path("remote-agent"));
    builder.environment().putAll(env);
    return builder;
  }

  /** Waits for the listening line; returns what the service printed until then. */
  private static List<String> awaitListening(Process process) throws Exception {
    BufferedReader out = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
    List<String> lines = new ArrayList<>();
    String line;
    while ((line = out.readLine()) != null) {
      lines.add(line);
      if (line.contains("kernel-runner is listening on")) {
        Thread drain = new Thread(() -> out.lines().forEach(l -> { }));
        drain.setDaemon(true);
        drain.start();
        return lines;
      }
    }
    throw new AssertionError("the service did not start:\n" + String.join("\n", lines));
  }

  private static Run runMain(Path dataDir, int port, java.util.Map<String, String> env) throws Exception {
    Process process = startMain(dataDir, port, env);
    String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertTrue(process.waitFor(90, TimeUnit.SECONDS));
    return new Run(process.exitValue(), output);
  }

  private record Run(int exitCode, String output) {}

  private static Run createFleet(FakeDstack fake, Path dataDir, String dryRun) throws Exception {
    ProcessBuilder builder = mainProcess("create-fleet").redirectErrorStream(true);
    builder.environment().put("DATA_DIR", dataDir.toString());
    builder.environment().put("DSTACK_SERVER_URL", fake.url());
    builder.environment().put("DSTACK_TOKEN", FakeDstack.TOKEN);
    builder.environment().put("DSTACK_PROJECT", "main");
    builder.environment().put("AMD_FLEET_MAX_NODES", "3");
    builder.environment().put("AMD_FLEET_DRY_RUN", dryRun);
    Process process = builder.start();
    String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertTrue(process.waitFor(60, java.util.concurrent.TimeUnit.SECONDS));
    return new Run(process.exitValue(), output);
  }

  /** Starts Main, checks readiness (and the printed token, if any, as admin), stops it; returns the token. */
  private static String runOnce(Path dataDir, int port, boolean checkToken) throws Exception {
    ProcessBuilder builder = mainProcess().redirectErrorStream(true);
    builder.environment().remove("DATABASE_URL");
    builder.environment().remove("ADMIN_TOKEN");
    builder.environment().put("DATA_DIR", dataDir.toString());
    // The default agent, from a copy every user can read (a root service runs it as another user, who may not
    // be able to enter the checkout).
    builder.environment().put("AGENT_WORKDIR", dev.kernelrunner.support.TestAgents.path("remote-agent").toString());
    builder.environment().put("HTTP_PORT", String.valueOf(port));
    builder.environment().put("HTTP_HOST", "127.0.0.1");
    Process process = builder.start();
    List<String> output = new ArrayList<>();
    String token = null;
    try (BufferedReader out = new BufferedReader(new InputStreamReader(process.getInputStream(),
        StandardCharsets.UTF_8))) {
      String line;
      while ((line = out.readLine()) != null) {
        output.add(line);
        Matcher m = TOKEN.matcher(line);
        if (m.find()) {
          token = m.group(1);
        }
        if (line.contains("kernel-runner is listening on")) {
          break;
        }
      }
      assertTrue(output.stream().anyMatch(l -> l.contains("listening")), String.join("\n", output));
      HttpClient http = HttpClient.newHttpClient();
      HttpResponse<String> ready = http.send(HttpRequest.newBuilder(
          URI.create("http://127.0.0.1:" + port + "/health/ready")).build(), HttpResponse.BodyHandlers.ofString());
      assertEquals(200, ready.statusCode(), ready.body());
      if (checkToken && token != null) {
        HttpResponse<String> admin = http.send(HttpRequest.newBuilder(
                URI.create("http://127.0.0.1:" + port + "/api/admin/tokens"))
            .header("Authorization", "Bearer " + token)
            .POST(HttpRequest.BodyPublishers.ofString("{\"user_id\": \"someone\"}")).build(),
            HttpResponse.BodyHandlers.ofString());
        assertEquals(201, admin.statusCode(), admin.body());
      }
      process.destroy();
      assertTrue(process.waitFor(60, TimeUnit.SECONDS), "stops on SIGTERM");
    } finally {
      process.destroyForcibly();
    }
    return token;
  }
}
