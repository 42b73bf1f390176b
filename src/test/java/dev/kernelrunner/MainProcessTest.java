package dev.kernelrunner;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.kernelrunner.support.FakeDstack;
import dev.kernelrunner.support.Ports;
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
    Path dataDir = Files.createTempDirectory("kr-main");
    int port = Ports.free();
    String firstToken = runOnce(dataDir, port, true);
    assertNotNull(firstToken, "the first start prints an admin token");
    assertFalse(Files.exists(dataDir.resolve("postgres/postmaster.pid")), "cluster stopped with the service");
    assertEquals(null, runOnce(dataDir, port, false), "the token is printed only once");
  }

  @Test
  void createFleetMakesTheFleetOnceOrOnlyWritesItInADryRun() throws Exception {
    try (FakeDstack fake = FakeDstack.start(new JsonObject())) {
      Path dataDir = Files.createTempDirectory("kr-fleet");
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
    Path dataDir = Files.createTempDirectory("kr-json");
    int port = Ports.free();
    Path stdout = dataDir.resolve("stdout.log");
    Path stderr = dataDir.resolve("stderr.log");
    ProcessBuilder builder = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
        "-cp", System.getProperty("java.class.path"), Main.class.getName())
        .redirectOutput(stdout.toFile()).redirectError(stderr.toFile());
    builder.environment().put("LOG_FORMAT", "json");
    builder.environment().put("DATA_DIR", dataDir.toString());
    builder.environment().put("HTTP_PORT", String.valueOf(port));
    builder.environment().put("HTTP_HOST", "127.0.0.1");
    builder.environment().put("ADMIN_TOKEN", "json-admin");
    builder.environment().put("AGENT_COMMAND", "python3 " + dev.kernelrunner.support.TestService.FAKE_AGENT);
    builder.environment().put("AGENT_WORKDIR", dataDir.toString());
    Process process = builder.start();
    String id;
    try {
      long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
      while (!Files.readString(stdout).contains("listening") && System.nanoTime() < deadline) {
        Thread.sleep(100);
      }
      HttpClient http = HttpClient.newHttpClient();
      HttpResponse<String> created = http.send(HttpRequest.newBuilder(
              URI.create("http://127.0.0.1:" + port + "/api/submissions"))
          .header("Authorization", "Bearer json-admin")
          .POST(HttpRequest.BodyPublishers.ofString("{\"problem\": \"leaky-relu\", \"language\": \"cuda\", "
              + "\"gpu_type\": \"local\", \"dtype\": \"float32\", \"code\": \"// agent: ok\"}")).build(),
          HttpResponse.BodyHandlers.ofString());
      assertEquals(201, created.statusCode(), created.body());
      id = new JsonObject(created.body()).getString("id");
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

  private record Run(int exitCode, String output) {}

  private static Run createFleet(FakeDstack fake, Path dataDir, String dryRun) throws Exception {
    ProcessBuilder builder = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
        "-cp", System.getProperty("java.class.path"), Main.class.getName(), "create-fleet")
        .redirectErrorStream(true);
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
    ProcessBuilder builder = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
        "-cp", System.getProperty("java.class.path"), Main.class.getName())
        .redirectErrorStream(true);
    builder.environment().remove("DATABASE_URL");
    builder.environment().remove("ADMIN_TOKEN");
    builder.environment().put("DATA_DIR", dataDir.toString());
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
