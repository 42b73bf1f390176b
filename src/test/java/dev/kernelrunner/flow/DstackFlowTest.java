package dev.kernelrunner.flow;

import static dev.kernelrunner.support.SseClient.types;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.kernelrunner.support.FakeDstack;
import dev.kernelrunner.support.SseClient;
import dev.kernelrunner.support.SseClient.Frame;
import dev.kernelrunner.support.TempDirs;
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
 * Submissions for MI300X through the dstack backend, against a fake dstack server built from dstack's source
 * (src/test/resources/dstack/fake_dstack_server.py) whose containers are real local runs of the test agent in a
 * pseudo-terminal. Every case ends in the right event with no run and no container left going.
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

  private static String message(JsonObject submission) {
    JsonObject error = submission.getJsonObject("error");
    return error == null ? "" : error.getString("message", "");
  }

  @ParameterizedTest
  @ValueSource(booleans = {false, true})
  void aRunStreamsLiveAndEndsBenchmarkedWithItsCost(boolean cutAnywhere, Vertx vertx) throws Exception {
    // cut_random: every log event ends at a random byte, so lines straddle events and polls; pages
    // of 5 events, so that reading the log takes next_token pages.
    try (FakeDstack fake = FakeDstack.start(new JsonObject().put("cut_random", cutAnywhere)
        .put("page_limit", cutAnywhere ? 5 : null));
         TestService service = start(vertx, fake, Map.of())) {
      // (The runner flushes its log 0.5 s after the cursor last moved, or every 3 s: ansistrip, executor.go:38-47.)
      String token = service.userToken("ada");
      try (SseClient stream = submitStreaming(service, token, "// agent: ok\n// delay: 0.8")) {
        Frame compiling = stream.nextOf("COMPILING", WAIT);
        assertNotNull(compiling, "the agent's first event arrives");
        JsonObject runs = fake.runs();
        assertEquals(1, runs.size());
        String name = runs.fieldNames().iterator().next();
        assertTrue(runs.getJsonObject(name).getBoolean("alive"), "the first event came while the container ran");
        List<Frame> rest = stream.untilEnd(WAIT);
        Frame end = last(rest);
        assertEquals("BENCHMARKED", end.event(), rest.toString());
        assertEquals(2, types(rest).stream().filter("BENCHMARK_RESULT"::equals).count(), rest.toString());
        double cost = end.data().getJsonObject("result", end.data()).getDouble("cost_usd", -1.0);
        assertTrue(cost > 0, "the result carries the run's cost: " + end.data());
        assertTrue(name.startsWith("kr-") && name.matches("^[a-z][a-z0-9-]{1,40}$"), "a valid run name: " + name);
        String stored = fake.runs().getJsonObject(name).getString("log");
        assertFalse(stored.contains("\r"), "the runner stores whole lines ending in LF (ansistrip)");
        if (cutAnywhere) {
          assertTrue(fake.state().getInteger("paged_polls") > 0, "the log was read over next_token pages");
        }
      }
      // The fleet was made before the first run, from the fleet template and the AMD_* settings.
      JsonObject fleet = fake.state().getJsonObject("fleets").getJsonObject("amd-mi300x-fleet");
      assertNotNull(fleet, "the fleet was created");
      JsonObject conf = fleet.getJsonObject("spec").getJsonObject("configuration");
      assertEquals(new JsonObject().put("min", 0).put("target", 0).put("max", 2), conf.getJsonObject("nodes"));
      assertEquals(new JsonArray().add("amddevcloud"), conf.getJsonArray("backends"));
      assertEquals("MI300X:192GB:1", conf.getJsonObject("resources").getString("gpu"));
      assertEquals(200, service.post("/api/admin/fleets/amd-mi300x-fleet/ensure", TestService.ADMIN_TOKEN, "")
          .status());
      JsonObject listed = service.get("/api/fleets", service.userToken("bob")).json().getJsonArray("fleets")
          .stream().map(JsonObject.class::cast).filter(f -> "amd-mi300x-fleet".equals(f.getString("name")))
          .findFirst().orElseThrow();
      assertTrue(listed.getBoolean("ready"));
      assertEquals("idle", listed.getJsonArray("nodes").getJsonObject(0).getString("status"));
      Response ready = service.get("/health/ready", null);
      assertEquals("UP", ready.json().getString("status"), ready.body());
      assertEquals("0.20.29", ready.json().getJsonObject("checks").getJsonObject("dstack").getString("version"));
      // X-API-VERSION on every call, never newer than the server's (get_info goes without: nothing can refuse it).
      assertApiVersions(fake, "0.20.0");
      fake.assertNothingRunning(WAIT);
    }
  }

  @Test
  void aProfileComesBackThroughTheTerminalLogWholeAndItsReportIsKept(Vertx vertx) throws Exception {
    // The report's pieces are 218 KB lines of a terminal's log: several of dstack's 32 KB chunks each, read over pages.
    try (FakeDstack fake = FakeDstack.start(new JsonObject().put("page_limit", 5));
         TestService service = start(vertx, fake, Map.of())) {
      String token = service.userToken("pia");
      Response created = service.post("/api/submissions", token, mi300x("// agent: ok").put("mode", "profile").encode());
      assertEquals(201, created.status(), created.body());
      String id = created.json().getString("id");
      JsonObject done = service.awaitFinished(id, WAIT);
      assertEquals("PROFILED", done.getString("status"), done.encode());
      JsonObject report = done.getJsonObject("result").getJsonObject("report");
      assertEquals(true, report.getBoolean("stored"), report.encode());
      assertEquals(2, done.getJsonArray("profile_results").size());
      TestService.Download file = service.download("/api/submissions/" + id + "/profile", token);
      assertEquals(200, file.status());
      assertEquals(384_000, file.body().length);
      fake.assertNothingRunning(WAIT);
    }
  }

  @Test
  void aRestartWhileTheReportArrivesReadsItsPiecesAgain(Vertx vertx) throws Exception {
    try (FakeDstack fake = FakeDstack.start(new JsonObject())) {
      Map<String, String> env = new HashMap<>(fake.serviceEnv());
      TestService first = TestService.start(vertx, env);
      String token = first.userToken("ada");
      Response created = first.post("/api/submissions", token,
          mi300x("// agent: ok\n// piece-delay: 1.5").put("mode", "profile").encode());
      String id = created.json().getString("id");
      long deadline = System.nanoTime() + WAIT.toNanos();
      while (!"PROFILING".equals(first.submission(id).getString("status")) && System.nanoTime() < deadline) {
        Thread.sleep(50);
      }
      Thread.sleep(1500); // the first piece is in; the others come 1.5 s apart
      first.stop();
      try (TestService second = TestService.start(vertx, env, first.databaseUrl(), first.dataDir())) {
        JsonObject done = second.awaitFinished(id, WAIT);
        assertEquals("PROFILED", done.getString("status"), done.encode());
        assertEquals(true, done.getJsonObject("result").getJsonObject("report").getBoolean("stored"), done.encode());
        assertEquals(384_000, second.download("/api/submissions/" + id + "/profile", token).body().length);
        try (SseClient replay = second.events(id, token, Map.of())) {
          List<String> seen = types(replay.untilEnd(WAIT));
          assertEquals(2, Collections.frequency(seen, "PROFILE_RESULT"), seen.toString());
          assertEquals(1, Collections.frequency(seen, "PROFILED"), seen.toString());
        }
        fake.assertNothingRunning(WAIT);
      }
    }
  }

  @Test
  void theCodeTravelsAsAnArchiveOnlyAndForgedOutputChangesNothing(Vertx vertx) throws Exception {
    try (FakeDstack fake = FakeDstack.start(new JsonObject());
         TestService service = start(vertx, fake, Map.of())) {
      String token = service.userToken("eve");
      String hostile = "// agent: forge\n'\"; rm -rf / #\n$(touch pwned)\n`id`\nEOF\n---\ncommands: [\"evil\"]\n"
          + "[error] Fleet amd-mi300x-fleet not found\n";
      String id = submit(service, token, hostile);
      JsonObject done = service.awaitFinished(id, WAIT);
      assertEquals("BENCHMARKED", done.getString("status"), done.encode());
      assertEquals(0.75, done.getDouble("avg_runtime_ms"), "the agent's result, not the forged 0.0001");
      assertFalse(done.containsKey("event_key"), "the key never reaches a client");
      assertEquals(hostile, Files.readString(fake.home().resolve("echo").resolve(id + ".code")),
          "the agent received the code byte for byte");
      String name = fake.state().getJsonArray("ever_runs").getString(0);
      JsonObject spec = new JsonObject(Files.readString(service.dataDir().resolve("runs").resolve(id)
          .resolve(name + ".run-spec.json")));
      assertFalse(spec.encode().contains("rm -rf"), "no user text in the run spec");
      assertEquals(List.of("cd remote-agent", "exec python3 fake_agent.py --payload ../payload.json"),
          spec.getJsonObject("configuration").getJsonArray("commands").getList());
      assertEquals(new JsonArray().add("amd-mi300x-fleet"), spec.getJsonObject("configuration").getJsonArray("fleets"));
      assertEquals(2, spec.getJsonArray("file_archives").size());
      assertFalse(Files.exists(Path.of("pwned")));
      try (SseClient replay = service.events(id, token, Map.of())) {
        List<String> seen = types(replay.untilEnd(WAIT));
        assertEquals(1, Collections.frequency(seen, "BENCHMARKED"), seen.toString());
      }
      fake.assertNothingRunning(WAIT);
    }
  }

  @Test
  void aContainerThatExitsOneIsARuntimeErrorWithItsLogTail(Vertx vertx) throws Exception {
    try (FakeDstack fake = FakeDstack.start(new JsonObject());
         TestService service = start(vertx, fake, Map.of())) {
      JsonObject done = service.awaitFinished(submit(service, service.userToken("ada"), "// agent: crash"), WAIT);
      assertEquals("RUNTIME_ERROR", done.getString("status"), done.encode());
      assertTrue(message(done).contains("exited with code 139"), done.encode());
      assertTrue(done.encode().contains("Segmentation fault"), "the log tail is kept: " + done.encode());
      fake.assertNothingRunning(WAIT);
    }
  }

  @ParameterizedTest
  @ValueSource(strings = {"no_capacity_attempts", "fleet_at_capacity_attempts"})
  void noCapacityIsRetriedWithABoundedBackoffThenAnError(String knob, Vertx vertx) throws Exception {
    try (FakeDstack fake = FakeDstack.start(new JsonObject().put(knob, 2))) {
      try (TestService service = start(vertx, fake, Map.of("DSTACK_NO_CAPACITY_RETRY_SECONDS", "20"));
           SseClient stream = submitStreaming(service, service.userToken("ada"), "// agent: ok")) {
        List<Frame> frames = stream.untilEnd(WAIT);
        assertEquals("BENCHMARKED", last(frames).event(), frames.toString());
        assertEquals(2, frames.stream().filter(f -> f.data().containsKey("retry_in_seconds")).count(),
            "the client is told of each retry: " + frames);
        assertEquals(3, fake.state().getJsonArray("ever_runs").size());
      }
      fake.configure(new JsonObject().put(knob, 1000));
      try (TestService service = start(vertx, fake, Map.of())) {
        JsonObject done = service.awaitFinished(submit(service, service.userToken("ada"), "// agent: ok"), WAIT);
        assertEquals("ERROR", done.getString("status"));
        assertTrue(message(done).contains("no capacity"), done.encode());
      }
      fake.assertNothingRunning(WAIT);
    }
  }

  @Test
  void aFleetDeletedBehindTheServicesBackIsMadeAgainAndTheRunRetriedOnce(Vertx vertx) throws Exception {
    try (FakeDstack fake = FakeDstack.start(new JsonObject());
         TestService service = start(vertx, fake, Map.of())) {
      String token = service.userToken("ada");
      assertEquals("BENCHMARKED", service.awaitFinished(submit(service, token, "// agent: ok"), WAIT)
          .getString("status"));
      fake.fake("delete-fleets");
      try (SseClient stream = submitStreaming(service, token, "// agent: ok")) {
        List<Frame> frames = stream.untilEnd(WAIT);
        assertEquals("BENCHMARKED", last(frames).event(), frames.toString());
        assertTrue(frames.stream().anyMatch(f -> String.valueOf(f.data().getString("message"))
            .contains("Failed to use specified fleets")), frames.toString());
      }
      assertNotNull(fake.state().getJsonObject("fleets").getJsonObject("amd-mi300x-fleet"), "made again");
      fake.assertNothingRunning(WAIT);
    }
  }

  @Test
  void cancelStopsTheRunAndItsContainerAndWaitsForDstacksKill(Vertx vertx) throws Exception {
    // dstack stops a command with SIGINT and kills it 10 s later (executor.go:504-512); an abort sent meanwhile
    // changes nothing (pipeline_tasks/runs/__init__.py:64-65). A short request timeout once made the service give
    // up on the run before that.
    try (FakeDstack fake = FakeDstack.start(new JsonObject());
         TestService service = start(vertx, fake, Map.of("DSTACK_REQUEST_TIMEOUT_SECONDS", "1"))) {
      String token = service.userToken("ada");
      String id = submit(service, token, "// agent: trap_term");
      awaitAgentStarted(service, id);
      long cancelledAt = System.nanoTime();
      Response cancelled = service.post("/api/submissions/" + id + "/cancel", token, "");
      assertEquals(202, cancelled.status(), cancelled.body());
      assertEquals("CANCELLED", service.awaitFinished(id, WAIT).getString("status"));
      JsonObject run = fake.runs().getJsonObject(service.submission(id).getString("run_name"));
      assertEquals("terminated", run.getString("status"), "cancelled once dstack ended the run: " + run.encode());
      assertEquals("stopped_by_user", run.getString("termination_reason"), "stopped, never aborted");
      assertTrue(Duration.ofNanos(System.nanoTime() - cancelledAt).toSeconds() >= 9, "after the runner's kill delay");
      fake.assertNothingRunning(WAIT);

      // The task's command execs the agent, so dstack's SIGINT is the agent's: it ends its job at once.
      String willing = submit(service, token, "// agent: ok\n// delay: 3");
      awaitAgentStarted(service, willing);
      long askedAt = System.nanoTime();
      assertEquals(202, service.post("/api/submissions/" + willing + "/cancel", token, "").status());
      assertEquals("CANCELLED", service.awaitFinished(willing, WAIT).getString("status"));
      assertTrue(Duration.ofNanos(System.nanoTime() - askedAt).toSeconds() < 8,
          "an agent that heard dstack's SIGINT did not wait for the kill");
      fake.assertNothingRunning(WAIT);
    }
  }

  @Test
  void aBurstThatRepeatsTimestampsArrivesWholeOverManyPolls(Vertx vertx) throws Exception {
    // The runner's per-second counter capped at 2 here (999 in dstack, timestamp.go:36-60): past the third log event
    // in a second every one has the same stamp. 2,000 events of 1 KB are some 70 log events of 32 KiB in a second
    // or two, read over many polls of pages of 7.
    try (FakeDstack fake = FakeDstack.start(new JsonObject().put("timestamp_counter_max", 2).put("page_limit", 7));
         TestService service = start(vertx, fake, Map.of())) {
      String token = service.userToken("ada");
      try (SseClient stream = submitStreaming(service, token, "// agent: flood\n// events: 2000\n// size: 1000")) {
        List<Frame> frames = stream.untilEnd(Duration.ofSeconds(90));
        assertEquals("BENCHMARKED", last(frames).event(), last(frames).data().encode());
        assertEquals(2000, types(frames).stream().filter("TEST_RESULT"::equals).count(), "no line lost or repeated");
      }
      fake.assertNothingRunning(WAIT);
    }
  }

  @Test
  void theLogQuotaEndsARunClearlyAndAProfileReportStaysUnderIt(Vertx vertx) throws Exception {
    // The runner kills a job whose log passes the server's hourly quota (executor.go:248-256): 300 KB here.
    try (FakeDstack fake = FakeDstack.start(new JsonObject().put("log_quota_hour", 300_000));
         TestService service = start(vertx, fake, Map.of("DSTACK_PROFILE_REPORT_MAX_MB", "1"))) {
      String token = service.userToken("ada");
      JsonObject noisy = service.awaitFinished(submit(service, token, "// agent: noisy\n// megabytes: 1"), WAIT);
      assertEquals("RUNTIME_ERROR", noisy.getString("status"), noisy.encode());
      assertTrue(message(noisy).startsWith("dstack killed the job because its output passed the dstack server's "
          + "per-job log quota (log_quota_exceeded: Job log output exceeded the hourly quota of 300000 bytes)"),
          noisy.encode());
      // A 1.5 MB report (2 MB of base64 log) is over the 1 MiB the backend lets through: declared, not sent.
      fake.configure(new JsonObject().put("log_quota_hour", 1_000_000));
      Response created = service.post("/api/submissions", token,
          mi300x("// agent: ok\n// report-bytes: 1500000").put("mode", "profile").encode());
      JsonObject profiled = service.awaitFinished(created.json().getString("id"), WAIT);
      assertEquals("PROFILED", profiled.getString("status"), profiled.encode());
      JsonObject report = profiled.getJsonObject("result").getJsonObject("report");
      assertEquals(false, report.getBoolean("stored"), report.encode());
      assertTrue(report.getString("withheld", "").contains("DSTACK_PROFILE_REPORT_MAX_MB"), report.encode());
      fake.assertNothingRunning(WAIT);
    }
  }

  @Test
  void cloudWatchRepeatingTheStartEventRepeatsNothing(Vertx vertx) throws Exception {
    // CloudWatch serves the event at startTime again (aws.py:167-168) and ends a page's token only when empty.
    try (FakeDstack fake = FakeDstack.start(new JsonObject().put("log_storage", "cloudwatch"));
         TestService service = start(vertx, fake, Map.of())) {
      try (SseClient stream = submitStreaming(service, service.userToken("ada"), "// agent: ok\n// delay: 0.8")) {
        List<Frame> frames = stream.untilEnd(WAIT);
        assertEquals("BENCHMARKED", last(frames).event(), frames.toString());
        List<String> types = types(frames);
        assertEquals(1, types.stream().filter("COMPILING"::equals).count(), types.toString());
        assertEquals(2, types.stream().filter("TEST_RESULT"::equals).count(), types.toString());
        assertEquals(2, types.stream().filter("BENCHMARK_RESULT"::equals).count(), types.toString());
      }
      fake.assertNothingRunning(WAIT);
    }
  }

  @Test
  void aLogStorageThatServesNothingIsNamedNotTakenForProvisioning(Vertx vertx) throws Exception {
    // fluent-bit without Elasticsearch: logs shipped, none read back (fluentbit.py:207-216).
    try (FakeDstack fake = FakeDstack.start(new JsonObject().put("log_storage", "fluentbit"));
         TestService service = start(vertx, fake, Map.of("DSTACK_PROVISIONING_TIMEOUT_SECONDS", "3"))) {
      JsonObject done = service.awaitFinished(submit(service, service.userToken("ada"), "// agent: hang"), WAIT);
      assertEquals("ERROR", done.getString("status"), done.encode());
      assertTrue(message(done).contains("serves no log") && message(done).contains("DSTACK_LOG_STORAGE"),
          done.encode());
      fake.assertNothingRunning(WAIT);
    }
    try (FakeDstack fake = FakeDstack.start(new JsonObject().put("log_storage", "fluentbit"));
         TestService service = start(vertx, fake, Map.of("DSTACK_LOG_STORAGE", "none"))) {
      JsonObject done = service.awaitFinished(submit(service, service.userToken("ada"), "// agent: ok"), WAIT);
      assertEquals("ERROR", done.getString("status"), done.encode());
      assertTrue(done.getJsonObject("error").getString("details", "").contains("DSTACK_LOG_STORAGE=none"),
          done.encode());
      assertEquals(0, fake.state().getJsonArray("ever_runs").size(), "nothing sent to dstack");
    }
  }

  @Test
  void theImagePullShowsItsProgressAndIsNotCountedAsProvisioning(Vertx vertx) throws Exception {
    // 3 s to get a machine, then a 3 s pull (image_pull_progress on the job submission, core/models/runs.py:422-457):
    // each within the 4 s limit, not both.
    try (FakeDstack fake = FakeDstack.start(new JsonObject().put("step_seconds", 1.5).put("pull_seconds", 2));
         TestService service = start(vertx, fake, Map.of("DSTACK_PROVISIONING_TIMEOUT_SECONDS", "4"))) {
      try (SseClient stream = submitStreaming(service, service.userToken("ada"), "// agent: ok")) {
        List<Frame> frames = stream.untilEnd(WAIT);
        assertEquals("BENCHMARKED", last(frames).event(), frames.toString());
        long pulls = frames.stream().filter(f -> "PROVISIONING".equals(f.event())
            && f.data().getJsonObject("image_pull") != null).count();
        assertTrue(pulls >= 1, "the pull's progress is shown: " + frames);
      }
      fake.assertNothingRunning(WAIT);
    }
  }

  @Test
  void provisioningPastItsLimitIsTimeLimitExceededAndTheRunIsStopped(Vertx vertx) throws Exception {
    try (FakeDstack fake = FakeDstack.start(new JsonObject().put("step_seconds", 3600));
         TestService service = start(vertx, fake, Map.of("DSTACK_PROVISIONING_TIMEOUT_SECONDS", "2"))) {
      JsonObject done = service.awaitFinished(submit(service, service.userToken("ada"), "// agent: ok"), WAIT);
      assertEquals("TIME_LIMIT_EXCEEDED", done.getString("status"), done.encode());
      fake.assertNothingRunning(WAIT);
    }
  }

  @Test
  void aServerAwayMidRunIsWaitedForAndOneAwayTooLongEndsTheSubmissionAndItsRun(Vertx vertx) throws Exception {
    try (FakeDstack fake = FakeDstack.start(new JsonObject());
         TestService service = start(vertx, fake, Map.of("DSTACK_PROVISIONING_TIMEOUT_SECONDS", "4"))) {
      String token = service.userToken("ada");
      String id = submit(service, token, "// agent: ok\n// delay: 0.5");
      awaitAgentStarted(service, id);
      double now = System.currentTimeMillis() / 1000.0;
      fake.configure(new JsonObject().put("down_from", now).put("down_until", now + 2));
      assertEquals("BENCHMARKED", service.awaitFinished(id, WAIT).getString("status"), "followed through 2 s away");
      String hanging = submit(service, token, "// agent: hang");
      awaitAgentStarted(service, hanging);
      now = System.currentTimeMillis() / 1000.0;
      fake.configure(new JsonObject().put("down_from", now).put("down_until", now + 8));
      JsonObject done = service.awaitFinished(hanging, WAIT);
      assertEquals("ERROR", done.getString("status"));
      assertTrue(message(done).contains("did not answer"), done.encode());
      fake.assertNothingRunning(WAIT); // stopped once the server answered again
    }
  }

  /**
   * Issue 29: dstack takes 2 MiB an upload by default, checked on Content-Length (routers/files.py:53-64), so a
   * proxy that buffers bodies checks what a chunked upload would slip past. The agent's archive fits; an upload over
   * the limit ends the submission with dstack's reason.
   */
  @Test
  void theArchivesFitDstacksUploadLimitBehindABufferingProxy(Vertx vertx) throws Exception {
    try (FakeDstack fake = FakeDstack.start(new JsonObject().put("buffering_proxy", true));
         TestService service = start(vertx, fake, Map.of())) {
      String id = submit(service, service.userToken("ada"), "// agent: ok");
      assertEquals("BENCHMARKED", service.awaitFinished(id, WAIT).getString("status"));
    }
    // A server whose limit is below the agent's archive: the submission ends saying so, nothing hangs.
    try (FakeDstack fake = FakeDstack.start(new JsonObject().put("buffering_proxy", true).put("upload_limit", 1024));
         TestService service = start(vertx, fake, Map.of())) {
      String tooBig = submit(service, service.userToken("ada"), "// agent: ok");
      JsonObject ended = service.awaitFinished(tooBig, WAIT);
      assertEquals("ERROR", ended.getString("status"), ended.encode());
      assertTrue(ended.getJsonObject("error").encode().contains("exceeds the limit"), ended.encode());
    }
  }

  @Test
  void refusalsAreClearErrors(Vertx vertx) throws Exception {
    // A wrong token: the health check names it, and a submission is refused saying it.
    try (FakeDstack fake = FakeDstack.start(new JsonObject().put("token", "another"));
         TestService service = start(vertx, fake, Map.of())) {
      Response refused = service.post("/api/submissions", service.userToken("ada"), mi300x("// agent: ok").encode());
      assertEquals(503, refused.status(), refused.body());
      assertTrue(refused.json().getString("message").contains("Invalid token"), refused.body());
      Response ready = service.get("/health/ready", null);
      assertEquals("DEGRADED", ready.json().getString("status"), ready.body());
      assertTrue(ready.json().getJsonObject("checks").getJsonObject("dstack").getString("error")
          .contains("DSTACK_TOKEN"), ready.body());
    }
    // A project the token's user cannot use (here: none of that name): named too, not taken for a working server.
    try (FakeDstack fake = FakeDstack.start(new JsonObject());
         TestService service = start(vertx, fake, Map.of("DSTACK_PROJECT", "nosuch"))) {
      Response refused = service.post("/api/submissions", service.userToken("ada"), mi300x("// agent: ok").encode());
      assertEquals(503, refused.status(), refused.body());
      assertTrue(refused.json().getString("message").contains("Not found"), refused.body());
    }
    // A server too old for this client (0.19.32 still requires ssh_key_pub in every run spec, which we never send);
    // then one older than our client version: we speak its version.
    try (FakeDstack fake = FakeDstack.start(new JsonObject().put("server_version", "0.19.32"));
         TestService service = start(vertx, fake, Map.of())) {
      Response tooOld = service.post("/api/submissions", service.userToken("ada"), mi300x("// agent: ok").encode());
      assertEquals(503, tooOld.status(), tooOld.body());
      assertTrue(tooOld.json().getString("message").contains("needs 0.19.33"), tooOld.body());
      fake.configure(new JsonObject().put("server_version", "0.19.40"));
      Thread.sleep(2100); // a server found unusable is asked again after 2 s
      String id = submit(service, service.userToken("bob"), "// agent: ok");
      assertEquals("BENCHMARKED", service.awaitFinished(id, WAIT).getString("status"));
      assertApiVersions(fake, "0.19.40");
      fake.assertNothingRunning(WAIT);
    }
    // A task template with a field dstack does not know: 422, quoted.
    try (FakeDstack fake = FakeDstack.start(new JsonObject())) {
      Map<String, String> env = new HashMap<>(fake.serviceEnv());
      Path template = fake.home().resolve("bad-template.json");
      Files.writeString(template, new JsonObject(Files.readString(Path.of(env.get("DSTACK_TASK_TEMPLATE"))))
          .put("bogus_field", 1).encode());
      env.put("DSTACK_TASK_TEMPLATE", template.toString());
      try (TestService service = TestService.start(vertx, env)) {
        JsonObject done = service.awaitFinished(submit(service, service.userToken("ada"), "// agent: ok"), WAIT);
        assertEquals("ERROR", done.getString("status"));
        assertTrue(message(done).contains("422") && message(done).contains("bogus_field"), done.encode());
      }
    }
  }

  @Test
  void aVanishedRunAMaxDurationAndAHugeLogEachEndRight(Vertx vertx) throws Exception {
    try (FakeDstack fake = FakeDstack.start(new JsonObject());
         TestService service = start(vertx, fake, Map.of())) {
      String token = service.userToken("ada");
      // 5 MB of user output that looks like dstack's errors, then the agent's events.
      String noisy = submit(service, token, "// agent: noisy\n// megabytes: 5");
      JsonObject done = service.awaitFinished(noisy, Duration.ofSeconds(90));
      assertEquals("BENCHMARKED", done.getString("status"), done.encode());
      fake.configure(new JsonObject().put("max_duration_seconds", 1));
      JsonObject limited = service.awaitFinished(submit(service, token, "// agent: hang"), WAIT);
      assertEquals("TIME_LIMIT_EXCEEDED", limited.getString("status"), limited.encode());
      fake.configure(new JsonObject().put("vanish_after_seconds", 0.5));
      JsonObject vanished = service.awaitFinished(submit(service, token, "// agent: hang"), WAIT);
      assertEquals("ERROR", vanished.getString("status"));
      assertTrue(message(vanished).contains("no longer knows the run"), vanished.encode());
      fake.assertNothingRunning(WAIT);
    }
  }

  @Test
  void withoutDstackConfiguredMi300xSubmissionsAreRefusedWithTheReasonAndLocalOnesRun(Vertx vertx) throws Exception {
    Path home = TempDirs.directory("no-dstack-home");
    try (TestService service = TestService.start(vertx, Map.of("HOME", home.toString()))) {
      Response refused = service.post("/api/submissions", service.userToken("ada"), mi300x("// agent: ok").encode());
      assertEquals(503, refused.status(), "offered nowhere, taken by nothing: " + refused.body());
      assertTrue(refused.body().contains("DSTACK_SERVER_URL"), refused.body());
      assertEquals("gpu_type", refused.json().getJsonArray("details").getJsonObject(0).getString("field"));
      Response ready = service.get("/health/ready", null);
      assertEquals("DEGRADED", ready.json().getString("status"), ready.body());
      assertEquals("BENCHMARKED", service.awaitFinished(service.submit(service.userToken("bob"), "// agent: ok"),
          WAIT).getString("status"));
    }
  }

  @Test
  void theDefaultProjectOfDstacksOwnConfigFileIsUsed(Vertx vertx) throws Exception {
    try (FakeDstack fake = FakeDstack.start(new JsonObject())) {
      Path home = TempDirs.directory("dstack-home");
      Files.createDirectories(home.resolve(".dstack"));
      // As dstack's ConfigManager.save writes it (core/services/configs/__init__.py:27-31: yaml.dump).
      Files.writeString(home.resolve(".dstack").resolve("config.yml"), "projects:\n- default: false\n  name: other\n"
          + "  token: nope\n  url: http://127.0.0.1:1\n- default: true\n  name: main\n  token: " + FakeDstack.TOKEN
          + "\n  url: " + fake.url() + "/\nrepos: []\n");
      Map<String, String> env = new HashMap<>(fake.serviceEnv());
      env.remove("DSTACK_SERVER_URL");
      env.remove("DSTACK_TOKEN");
      env.remove("DSTACK_PROJECT");
      env.put("HOME", home.toString());
      try (TestService service = TestService.start(vertx, env)) {
        assertEquals("BENCHMARKED", service.awaitFinished(submit(service, service.userToken("ada"), "// agent: ok"),
            WAIT).getString("status"));
      }
      fake.assertNothingRunning(WAIT);
    }
  }

  @Test
  void aRestartFollowsRunsAgainWithoutDuplicatesAndStopsOrphans(Vertx vertx) throws Exception {
    try (FakeDstack fake = FakeDstack.start(new JsonObject().put("cut_random", true))) {
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
      // An orphan of this service's naming, someone else's run that must be left alone, and one of this service's
      // naming made by another member of the project (its user is not ours: never ours to stop).
      String orphan = "kr-" + "0".repeat(32) + "-zzz";
      String theirs = "kr-" + "0".repeat(32) + "-yyy";
      fake.configure(new JsonObject().put("cut_random", true).put("other_users", new JsonObject().put("bobs-token", "bob")));
      for (String name : List.of(orphan, "someone-else", theirs)) {
        JsonObject task = new JsonObject().put("type", "task").put("name", name).put("commands", List.of("sleep 300"));
        assertEquals(200, fake.api("/api/project/main/runs/apply", new JsonObject().put("plan", new JsonObject()
            .put("run_spec", new JsonObject().put("run_name", name).put("configuration", task))).put("force", false),
            name.equals(theirs) ? "bobs-token" : FakeDstack.TOKEN).statusCode());
      }
      long deadline = System.nanoTime() + WAIT.toNanos();
      while (!"done".equals(runStatus(fake, endingRun)) && System.nanoTime() < deadline) {
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
        while (System.nanoTime() < until && !"terminated".equals(runStatus(fake, orphan))) {
          Thread.sleep(100);
        }
        assertEquals("terminated", runStatus(fake, orphan), "the orphan was stopped");
        assertEquals("running", runStatus(fake, "someone-else"), "another service's run is left alone");
        assertEquals("running", runStatus(fake, theirs), "another member's run is left alone, whatever its name");
        fake.api("/api/project/main/runs/stop", new JsonObject().put("runs_names", List.of("someone-else", theirs))
            .put("abort", true));
        fake.assertNothingRunning(WAIT);
      }
    }
  }

  /** Every call but get_info carried {@code expected} as X-API-VERSION (get_info carried none). */
  private static void assertApiVersions(FakeDstack fake, String expected) throws Exception {
    JsonArray requests = fake.state().getJsonArray("requests");
    assertFalse(requests.isEmpty());
    for (Object item : requests) {
      JsonObject seen = (JsonObject) item;
      boolean info = seen.getString("path").equals("/api/server/get_info");
      assertEquals(info ? null : expected, seen.getString("version"), seen.toString());
    }
  }

  private static String runStatus(FakeDstack fake, String name) throws Exception {
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
