package dev.kernelrunner.flow;

import static dev.kernelrunner.support.SseClient.types;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.kernelrunner.support.FakeDstack;
import dev.kernelrunner.support.Processes;
import dev.kernelrunner.support.SseClient;
import dev.kernelrunner.support.SseClient.Frame;
import dev.kernelrunner.support.TestService;
import dev.kernelrunner.support.TestService.Response;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.junit5.VertxExtension;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Submissions for MI300X through the dstack backend, against the fake dstack CLI (0.20 JSON mode and 0.19
 * table mode) whose "container" is a real local run of the test agent. Every case ends in the right event
 * with no run and no container left going.
 */
@ExtendWith(VertxExtension.class)
class DstackFlowTest {
  private static final Duration WAIT = Duration.ofSeconds(40);

  private static JsonObject mi300x(String code) {
    return TestService.submission(code, "benchmark").put("gpu_type", "MI300X");
  }

  private static TestService start(Vertx vertx, FakeDstack fake, Map<String, String> extra) throws Exception {
    Map<String, String> env = new HashMap<>(fake.serviceEnv());
    env.putAll(extra);
    return TestService.start(vertx, env);
  }

  private static SseClient submitStreaming(TestService service, String token, String code) throws Exception {
    return SseClient.open(service.port(), "POST", "/api/submissions", Map.of("Authorization", "Bearer " + token),
        mi300x(code).encode());
  }

  private static String submit(TestService service, String token, String code) throws Exception {
    Response response = service.post("/api/submissions", token, mi300x(code).encode());
    assertEquals(201, response.status(), response.body());
    return response.json().getString("id");
  }

  private static Frame last(List<Frame> frames) {
    return frames.get(frames.size() - 1);
  }

  @ParameterizedTest
  @ValueSource(strings = {"json", "table"})
  void aRunStreamsLiveAndEndsBenchmarkedWithItsCost(String mode, Vertx vertx) throws Exception {
    FakeDstack fake = FakeDstack.create(new JsonObject().put("mode", mode).put("banner", true));
    try (TestService service = start(vertx, fake, Map.of())) {
      String token = service.userToken("ada");
      try (SseClient stream = submitStreaming(service, token, "// agent: ok\n// delay: 0.3")) {
        Frame compiling = stream.nextOf("COMPILING", WAIT);
        assertNotNull(compiling, "the agent's first event arrives");
        // Live: the container is still running when its first event reaches the client.
        JsonObject runs = fake.runs();
        assertEquals(1, runs.size());
        String name = runs.fieldNames().iterator().next();
        assertFalse(Files.exists(fake.home().resolve("runs").resolve(name).resolve("exit_status")),
            "the first event came while the task still ran");
        List<Frame> rest = stream.untilEnd(WAIT);
        Frame end = last(rest);
        assertEquals("BENCHMARKED", end.event(), rest.toString());
        assertEquals(2, types(rest).stream().filter("BENCHMARK_RESULT"::equals).count());
        double cost = end.data().getJsonObject("result", end.data()).getDouble("cost_usd", -1.0);
        assertTrue(cost > 0, "the result carries the run's cost: " + end.data());
        assertTrue(name.startsWith("kr-"), name);
        assertTrue(name.length() <= 41, "a valid dstack run name: " + name);
      }
      // The fleet was made before the first run, from the fleet template and the AMD_* settings.
      JsonObject fleet = fake.state().getJsonObject("fleets").getJsonObject("amd-mi300x-fleet");
      assertNotNull(fleet, "the fleet was created");
      JsonObject conf = fleet.getJsonObject("conf");
      assertEquals("0..2", conf.getString("nodes"));
      assertEquals(new JsonArray().add("amddevcloud"), conf.getJsonArray("backends"));
      assertEquals("MI300X:192GB:1", conf.getJsonObject("resources").getString("gpu"));
      assertEquals(200, service.post("/api/admin/fleets/amd-mi300x-fleet/ensure", TestService.ADMIN_TOKEN, "")
          .status());
      JsonObject listed = service.get("/api/fleets", service.userToken("bob")).json().getJsonArray("fleets")
          .stream().map(JsonObject.class::cast).filter(f -> "amd-mi300x-fleet".equals(f.getString("name")))
          .findFirst().orElseThrow();
      assertTrue(listed.getBoolean("ready"));
      assertNotNull(listed.getString("last_checked"));
      if (mode.equals("json")) {
        assertEquals("idle", listed.getJsonArray("nodes").getJsonObject(0).getString("status"),
            "the node as dstack reports it after the run");
      }
      Response ready = service.get("/health/ready", null);
      assertEquals("UP", ready.json().getString("status"), ready.body());
      assertEquals("UP", ready.json().getJsonObject("checks").getJsonObject("fleet:amd-mi300x-fleet")
          .getString("status"));
      fake.assertNothingRunning(WAIT);
    }
  }

  @Test
  void theTaskCarriesTheCodeAsAFileOnly(Vertx vertx) throws Exception {
    FakeDstack fake = FakeDstack.create(new JsonObject());
    try (TestService service = start(vertx, fake, Map.of())) {
      String token = service.userToken("eve");
      String hostile = "// agent: ok\n'\"; rm -rf / #\n$(touch pwned)\n`id`\nEOF\n---\ncommands: [\"evil\"]\n";
      String id = submit(service, token, hostile);
      assertEquals("BENCHMARKED", service.awaitFinished(id, WAIT).getString("status"));
      String name = fake.runs().fieldNames().iterator().next();
      Path folder = fake.home().resolve("runs").resolve(name);
      assertEquals(hostile, Files.readString(folder.resolve("remote-agent").resolve(id + ".code")),
          "the agent received the code byte for byte");
      Path task = service.dataDir().resolve("runs").resolve(id).resolve(name + ".dstack.yml");
      String written = Files.readString(task);
      assertFalse(written.contains("rm -rf"), "no user text in the task configuration");
      JsonObject conf = new JsonObject(written);
      assertEquals(List.of("cd remote-agent", "python3 fake_agent.py --payload ../payload.json"),
          conf.getJsonArray("commands").getList());
      assertEquals(new JsonArray().add("amd-mi300x-fleet"), conf.getJsonArray("fleets"));
      assertEquals(id, conf.getJsonObject("env").getString("KERNEL_RUNNER_SUBMISSION_ID"));
      assertFalse(Files.exists(Path.of("pwned")));
      fake.assertNothingRunning(WAIT);
    }
  }

  @ParameterizedTest
  @ValueSource(strings = {"json", "table"})
  void aContainerThatExitsOneIsARuntimeErrorWithItsLogTail(String mode, Vertx vertx) throws Exception {
    FakeDstack fake = FakeDstack.create(new JsonObject().put("mode", mode));
    try (TestService service = start(vertx, fake, Map.of())) {
      String id = submit(service, service.userToken("ada"), "// agent: crash");
      JsonObject done = service.awaitFinished(id, WAIT);
      assertEquals("RUNTIME_ERROR", done.getString("status"), done.encode());
      JsonObject error = done.getJsonObject("error");
      assertTrue(error.getString("message").contains("exited with code 139"), error.encode());
      assertTrue(String.valueOf(error.getValue("details")).contains("Segmentation fault"), error.encode());
      fake.assertNothingRunning(WAIT);
    }
  }

  @ParameterizedTest
  @ValueSource(strings = {"json", "table"})
  void noCapacityIsRetriedWithABoundedBackoffThenAnError(String mode, Vertx vertx) throws Exception {
    FakeDstack fake = FakeDstack.create(new JsonObject().put("mode", mode).put("no_capacity", true)
        .put("step_seconds", 0.2));
    try (TestService service = start(vertx, fake, Map.of())) {
      try (SseClient stream = submitStreaming(service, service.userToken("ada"), "// agent: ok")) {
        List<Frame> frames = stream.untilEnd(WAIT);
        Frame end = last(frames);
        assertEquals("ERROR", end.event(), frames.toString());
        assertTrue(end.data().getString("message").contains("capacity"), end.data().encode());
        assertEquals(mode.equals("json") ? "no capacity" : "no offers", end.data().getString("status_message"),
            "0.21 says no capacity, older CLIs no offers: both are retried");
        long retries = frames.stream().filter(f -> f.event().equals("PROVISIONING"))
            .filter(f -> String.valueOf(f.data().getString("message")).contains("trying again")).count();
        assertTrue(retries >= 1, "the client is told about the retries: " + frames);
        assertTrue(fake.runs().size() >= 2, "each attempt is a new run: " + fake.runs().fieldNames());
      }
      fake.assertNothingRunning(WAIT);
    }
  }

  @Test
  void cliFaultsBecomeClearErrors(Vertx vertx) throws Exception {
    FakeDstack fake = FakeDstack.create(new JsonObject().put("apply_noop", true));
    try (TestService service = start(vertx, fake, Map.of("DSTACK_CLI_TIMEOUT_SECONDS", "2"))) {
      String token = service.userToken("ada");
      JsonObject noop = service.awaitFinished(submit(service, token, "// agent: ok"), WAIT);
      assertEquals("ERROR", noop.getString("status"));
      assertTrue(noop.getJsonObject("error").getString("message").contains("did not submit"), noop.encode());

      fake.configure(new JsonObject().put("error", new JsonObject().put("apply", "Backend amddevcloud is not configured")));
      JsonObject errored = service.awaitFinished(submit(service, token, "// agent: ok"), WAIT);
      assertEquals("ERROR", errored.getString("status"));
      assertTrue(errored.getJsonObject("error").getString("message").contains("Backend amddevcloud is not configured"),
          errored.encode());

      fake.configure(new JsonObject().put("hang", new JsonArray().add("apply")));
      long started = System.nanoTime();
      JsonObject hung = service.awaitFinished(submit(service, token, "// agent: ok"), WAIT);
      assertEquals("ERROR", hung.getString("status"));
      assertTrue(hung.getJsonObject("error").getString("message").contains("did not answer within 2 s"), hung.encode());
      assertTrue(System.nanoTime() - started < Duration.ofSeconds(20).toNanos());

      fake.configure(new JsonObject());
      fake.assertNothingRunning(WAIT);
    }
  }

  @Test
  void aTableCutAtEightyColumnsIsNeverReadAsAStatus(Vertx vertx) throws Exception {
    FakeDstack fake = FakeDstack.create(new JsonObject().put("mode", "table").put("ignore_columns", true));
    try (TestService service = start(vertx, fake, Map.of())) {
      JsonObject cut = service.awaitFinished(submit(service, service.userToken("ada"), "// agent: hang"), WAIT);
      assertEquals("ERROR", cut.getString("status"));
      assertTrue(cut.getJsonObject("error").getString("message").contains("cut short"), cut.encode());
      fake.configure(new JsonObject().put("mode", "table"));
      fake.assertNothingRunning(WAIT);
    }
  }

  @ParameterizedTest
  @ValueSource(strings = {"json", "table"})
  void cancelStopsTheRunAndItsContainer(String mode, Vertx vertx) throws Exception {
    FakeDstack fake = FakeDstack.create(new JsonObject().put("mode", mode).put("lose_tail", true));
    try (TestService service = start(vertx, fake, Map.of())) {
      String token = service.userToken("ada");
      try (SseClient stream = submitStreaming(service, token, "// agent: trap_term")) {
        Frame queued = stream.next(WAIT);
        String id = queued.data().getString("submission_id");
        Frame compiling = stream.nextOf("COMPILING", WAIT);
        assertNotNull(compiling);
        long agentPid = compiling.data().getLong("agent_pid");
        long childPid = compiling.data().getLong("child_pid");
        assertTrue(Processes.alive(agentPid));
        Response cancelled = service.post("/api/submissions/" + id + "/cancel", token, "");
        assertEquals(202, cancelled.status(), cancelled.body());
        assertEquals("CANCELLED", cancelled.json().getString("status"));
        Frame end = last(stream.untilEnd(WAIT));
        assertEquals("CANCELLED", end.event());
        assertFalse(Processes.alive(agentPid), "the agent (which ignores TERM) is gone after the abort");
        assertFalse(Processes.alive(childPid));
        List<String> calls = fake.calls();
        assertTrue(calls.stream().anyMatch(c -> c.startsWith("stop ") && c.endsWith(" -y")), calls.toString());
        assertTrue(calls.stream().anyMatch(c -> c.startsWith("stop ") && c.endsWith(" -y -x")),
            "a run that ignores stop is aborted: " + calls);
      }
      fake.assertNothingRunning(WAIT);
    }
  }

  @Test
  void provisioningPastItsLimitIsTimeLimitExceededAndTheRunIsStopped(Vertx vertx) throws Exception {
    FakeDstack fake = FakeDstack.create(new JsonObject().put("step_seconds", 3600));
    try (TestService service = start(vertx, fake, Map.of("DSTACK_PROVISIONING_TIMEOUT_SECONDS", "2"))) {
      try (SseClient stream = submitStreaming(service, service.userToken("ada"), "// agent: ok")) {
        List<Frame> frames = stream.untilEnd(WAIT);
        Frame end = last(frames);
        assertEquals("TIME_LIMIT_EXCEEDED", end.event(), frames.toString());
        assertEquals("provisioning", end.data().getString("phase"));
        assertTrue(frames.stream().anyMatch(f -> f.event().equals("PROVISIONING")
            && "submitted".equals(f.data().getString("dstack_status"))), "dstack's status reaches the client");
      }
      JsonObject run = (JsonObject) fake.runs().iterator().next().getValue();
      assertEquals("terminated", run.getString("status"));
      fake.assertNothingRunning(WAIT);
    }
  }

  @Test
  void anAbsentCliIsAClearErrorAndAHealthLine(Vertx vertx) throws Exception {
    FakeDstack fake = FakeDstack.create(new JsonObject());
    try (TestService service = start(vertx, fake, Map.of("DSTACK_COMMAND", "/nonexistent/bin/dstack"))) {
      JsonObject done = service.awaitFinished(submit(service, service.userToken("ada"), "// agent: ok"), WAIT);
      assertEquals("ERROR", done.getString("status"));
      String message = done.getJsonObject("error").getString("message");
      assertTrue(message.contains("/nonexistent/bin/dstack"), message);
      Response ready = service.get("/health/ready", null);
      assertEquals(200, ready.status(), "local GPU types still work");
      assertEquals("DEGRADED", ready.json().getString("status"));
      assertTrue(ready.json().getJsonArray("failed").contains("dstack"), ready.body());
      assertTrue(ready.json().getJsonObject("checks").getJsonObject("dstack").getString("error")
          .contains("/nonexistent/bin/dstack"), ready.body());
      // A local submission is unaffected.
      String local = service.submit(service.userToken("bob"), "// agent: ok");
      assertEquals("BENCHMARKED", service.awaitFinished(local, WAIT).getString("status"));
    }
  }

  @Test
  void runsInFlightAreCappedByTheFleetSizeAndShareOneFleetCheck(Vertx vertx) throws Exception {
    FakeDstack fake = FakeDstack.create(new JsonObject());
    try (TestService service = start(vertx, fake, Map.of("AMD_FLEET_MAX_NODES", "1"))) {
      String token = service.userToken("ada");
      List<String> ids = new java.util.ArrayList<>();
      for (int i = 0; i < 3; i++) {
        ids.add(submit(service, token, "// agent: ok\n// delay: 0.05"));
      }
      JsonObject third = service.submission(ids.get(2));
      assertEquals("IN_QUEUE", third.getString("status"));
      for (String id : ids) {
        assertEquals("BENCHMARKED", service.awaitFinished(id, WAIT).getString("status"));
      }
      List<String> applies = fake.calls().stream().filter(c -> c.startsWith("apply")).toList();
      assertEquals(4, applies.size(), "one fleet apply, then one apply per submission: " + applies);
      assertEquals(1, fake.calls().stream().filter(c -> c.startsWith("apply") && c.contains(".fleet.")).count(),
          "three submissions, one fleet creation: " + fake.calls());
      assertEquals(2, fake.calls().stream().filter(c -> c.startsWith("fleet get")).count(),
          "the fleet is looked up once (and described once after its creation), then known: " + fake.calls());
      // At most one run was ever in flight: every run began after the previous one ended.
      List<Double> created = fake.runs().stream().map(e -> ((JsonObject) e.getValue()).getDouble("created"))
          .sorted().toList();
      assertEquals(3, created.size());
      fake.assertNothingRunning(WAIT);
    }
  }

  @Test
  void aMissingFleetIsCreatedOnRequestOrOnlyWrittenInADryRun(Vertx vertx) throws Exception {
    FakeDstack fake = FakeDstack.create(new JsonObject());
    try (TestService service = start(vertx, fake, Map.of("AMD_FLEET_DRY_RUN", "true"))) {
      Response ensured = service.post("/api/admin/fleets/amd-mi300x-fleet/ensure", TestService.ADMIN_TOKEN, "");
      assertEquals(200, ensured.status(), ensured.body());
      assertTrue(ensured.json().getBoolean("dry_run"));
      assertFalse(ensured.json().getBoolean("ready"));
      Path written = Path.of(ensured.json().getString("config_path"));
      JsonObject conf = new JsonObject(Files.readString(written));
      assertEquals("fleet", conf.getString("type"));
      assertEquals("10m", conf.getString("idle_duration"));
      assertTrue(fake.state().getJsonObject("fleets").isEmpty(), "a dry run applies nothing");
      assertEquals(403, service.post("/api/admin/fleets/amd-mi300x-fleet/ensure", service.userToken("ada"), "")
          .status());
      assertEquals(404, service.post("/api/admin/fleets/nope/ensure", TestService.ADMIN_TOKEN, "").status());
    }
    try (TestService service = start(vertx, fake, Map.of())) {
      Response ensured = service.post("/api/admin/fleets/amd-mi300x-fleet/ensure", TestService.ADMIN_TOKEN, "");
      assertEquals(200, ensured.status(), ensured.body());
      assertTrue(ensured.json().getBoolean("ready"), ensured.body());
      assertEquals("active", ensured.json().getString("status"));
      Response again = service.post("/api/admin/fleets/amd-mi300x-fleet/ensure", TestService.ADMIN_TOKEN, "");
      assertTrue(again.json().getBoolean("ready"));
      assertEquals(1, fake.calls().stream().filter(c -> c.startsWith("apply")).count(), "created once");
    }
  }

  @Test
  void aMissingFleetFoundByARunIsCreatedAndTheRunRetried(Vertx vertx) throws Exception {
    FakeDstack fake = FakeDstack.create(new JsonObject());
    try (TestService service = start(vertx, fake, Map.of())) {
      String token = service.userToken("ada");
      assertEquals("BENCHMARKED", service.awaitFinished(submit(service, token, "// agent: ok"), WAIT)
          .getString("status"));
      // Someone deletes the fleet behind the service's back: the next run finds "no fleets".
      JsonObject state = fake.state();
      state.put("fleets", new JsonObject());
      Files.writeString(fake.home().resolve("state.json"), state.encode());
      try (SseClient stream = submitStreaming(service, token, "// agent: ok")) {
        List<Frame> frames = stream.untilEnd(WAIT);
        assertEquals("BENCHMARKED", last(frames).event(), frames.toString());
        assertTrue(frames.stream().anyMatch(f -> String.valueOf(f.data().getString("message")).contains("no fleet")),
            frames.toString());
      }
      assertNotNull(fake.state().getJsonObject("fleets").getJsonObject("amd-mi300x-fleet"));
      fake.assertNothingRunning(WAIT);
    }
  }

  @Test
  void aRestartFollowsRunsAgainWithoutDuplicatesAndStopsOrphans(Vertx vertx) throws Exception {
    FakeDstack fake = FakeDstack.create(new JsonObject());
    Map<String, String> env = new HashMap<>(fake.serviceEnv());
    TestService first = TestService.start(vertx, env);
    String token = first.userToken("ada");
    // One run that goes on while the service is down, one that ends while it is down.
    String going = submit(first, token, "// agent: ok\n// delay: 0.6");
    String ending = submit(first, token, "// agent: ok\n// delay: 0.2");
    awaitAgentStarted(first, going);
    awaitAgentStarted(first, ending);
    String endingRun = first.submission(ending).getString("run_name");
    first.stop();
    // An orphan of this service's naming, and someone else's run that must be left alone.
    Path orphanTask = fake.home().resolve("orphan.json");
    Files.writeString(orphanTask, new JsonObject().put("type", "task").put("name", "kr-" + "0".repeat(32) + "-zzzz")
        .put("commands", List.of("sleep 300")).encode());
    fake.cli("apply", "-f", orphanTask.toString(), "-y", "-d");
    Path otherTask = fake.home().resolve("other.json");
    Files.writeString(otherTask, new JsonObject().put("type", "task").put("name", "someone-else")
        .put("commands", List.of("sleep 300")).encode());
    fake.cli("apply", "-f", otherTask.toString(), "-y", "-d");
    long deadline = System.nanoTime() + WAIT.toNanos();
    while (!Files.exists(fake.home().resolve("runs").resolve(endingRun).resolve("exit_status"))
        && System.nanoTime() < deadline) {
      Thread.sleep(100);
    }
    try (TestService second = TestService.start(vertx, env, first.databaseUrl(), first.dataDir())) {
      for (String id : List.of(going, ending)) {
        assertEquals("BENCHMARKED", second.awaitFinished(id, WAIT).getString("status"), id);
        try (SseClient replay = second.events(id, token, Map.of())) {
          List<String> seen = types(replay.untilEnd(WAIT));
          for (String once : List.of("COMPILING", "CHECKING", "CHECKED", "BENCHMARKING", "BENCHMARKED")) {
            assertEquals(1, Collections.frequency(seen, once), once + " exactly once: " + seen);
          }
          assertEquals(2, Collections.frequency(seen, "TEST_RESULT"), seen.toString());
          assertEquals(2, Collections.frequency(seen, "BENCHMARK_RESULT"), seen.toString());
        }
      }
      long until = System.nanoTime() + WAIT.toNanos();
      while (System.nanoTime() < until && !"terminated".equals(runStatus(fake, "kr-" + "0".repeat(32) + "-zzzz"))) {
        Thread.sleep(100);
      }
      assertEquals("terminated", runStatus(fake, "kr-" + "0".repeat(32) + "-zzzz"), "the orphan was stopped");
      assertEquals("running", runStatus(fake, "someone-else"), "another service's run is left alone");
      fake.cli("stop", "someone-else", "-y", "-x");
      fake.assertNothingRunning(WAIT);
    }
  }

  private static String runStatus(FakeDstack fake, String name) throws Exception {
    fake.cli("ps", "-a");
    JsonObject run = fake.runs().getJsonObject(name);
    return run == null ? null : run.getString("status");
  }

  private static void awaitAgentStarted(TestService service, String id) throws Exception {
    long deadline = System.nanoTime() + WAIT.toNanos();
    while (System.nanoTime() < deadline) {
      if (!List.of("IN_QUEUE", "PROVISIONING").contains(service.submission(id).getString("status"))) {
        return;
      }
      Thread.sleep(20);
    }
    throw new AssertionError(id + " never started: " + service.submission(id));
  }
}
