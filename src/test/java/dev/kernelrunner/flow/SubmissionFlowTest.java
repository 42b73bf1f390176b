package dev.kernelrunner.flow;

import static dev.kernelrunner.support.SseClient.types;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.kernelrunner.support.SseClient;
import dev.kernelrunner.support.SseClient.Frame;
import dev.kernelrunner.support.TestService;
import dev.kernelrunner.support.TestService.Response;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.junit5.VertxExtension;
import java.nio.file.Files;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** A submission end to end through the HTTP API: events, streams, replay, stored results, agent faults. */
@ExtendWith(VertxExtension.class)
class SubmissionFlowTest {
  private static final Duration WAIT = Duration.ofSeconds(30);
  private static final List<String> BENCHMARK_SEQUENCE = List.of("IN_QUEUE", "PROVISIONING", "COMPILING",
      "CHECKING", "TEST_RESULT", "TEST_RESULT", "CHECKED", "BENCHMARKING", "BENCHMARK_RESULT", "BENCHMARK_RESULT",
      "BENCHMARKED");

  private static TestService service;
  private static String alice;

  @BeforeAll
  static void start(Vertx vertx) throws Exception {
    service = TestService.start(vertx, Map.of("LOCAL_MAX_CONCURRENT", "2"));
    alice = service.userToken("alice");
  }

  @AfterAll
  static void stop() throws Exception {
    service.close();
  }

  private static void assertSequenceNumbers(List<Frame> frames, int first) {
    for (int i = 0; i < frames.size(); i++) {
      assertEquals(first + i, frames.get(i).id(), "frame " + i + " of " + frames);
      assertEquals(frames.get(i).id(), frames.get(i).data().getInteger("seq"));
      assertEquals(frames.get(i).event(), frames.get(i).data().getString("status"));
      assertNotNull(frames.get(i).data().getString("at"));
    }
  }

  @Test
  void fullEventSequenceIsStreamedAndStored() throws Exception {
    String id = service.submit(alice, "// agent: ok\n__global__ void solution() {}");
    try (SseClient stream = service.events(id, alice, Map.of())) {
      assertEquals(200, stream.status());
      assertTrue(stream.header("content-type").startsWith("text/event-stream"));
      List<Frame> frames = stream.untilEnd(WAIT);
      assertEquals(BENCHMARK_SEQUENCE, types(frames));
      assertSequenceNumbers(frames, 1);
      frames.forEach(f -> assertEquals(id, f.data().getString("submission_id")));
      assertEquals(0, frames.get(0).data().getInteger("position"));
      assertEquals(0.75, frames.get(frames.size() - 1).data().getDouble("avg_runtime_ms"));
    }
    JsonObject stored = service.get("/api/submissions/" + id, alice).json();
    assertEquals("BENCHMARKED", stored.getString("status"));
    assertEquals("alice", stored.getString("user_id"));
    assertEquals("worker", stored.getString("backend")); // this host's GPUs are served by local workers
    assertEquals(0.75, stored.getDouble("avg_runtime_ms"));
    assertEquals(75.0, stored.getDouble("avg_gflops"));
    assertEquals(2, stored.getJsonArray("test_results").size());
    assertEquals("PASSED", stored.getJsonArray("test_results").getJsonObject(0).getString("status"));
    assertEquals(2, stored.getJsonArray("benchmark_results").size());
    assertEquals(1.0, stored.getJsonArray("benchmark_results").getJsonObject(1).getDouble("runtime_ms"));
    assertNotNull(stored.getString("created_at"));
    assertNotNull(stored.getString("started_at"));
    assertNotNull(stored.getString("finished_at"));
    assertNull(stored.getValue("error"));
    assertFalse(stored.containsKey("code"), "code only when asked for");
    assertFalse(stored.containsKey("pid"), "process ids are for admins");
    JsonObject withCode = service.get("/api/submissions/" + id + "?include=code", alice).json();
    assertEquals("// agent: ok\n__global__ void solution() {}", withCode.getString("code"));
  }

  @Test
  void checkModeEndsAtChecked() throws Exception {
    String id = service.submit(alice, "// agent: ok", "check");
    try (SseClient stream = service.events(id, alice, Map.of())) {
      assertEquals(List.of("IN_QUEUE", "PROVISIONING", "COMPILING", "CHECKING", "TEST_RESULT", "TEST_RESULT",
          "CHECKED"), types(stream.untilEnd(WAIT)));
    }
    JsonObject stored = service.submission(id);
    assertEquals("CHECKED", stored.getString("status"));
    assertEquals(2, stored.getJsonObject("result").getInteger("passed_tests"));
  }

  @Test
  void oneCallFlowStreamsTheNewSubmission() throws Exception {
    try (SseClient stream = service.submitStreaming(alice, "// agent: ok")) {
      assertEquals(200, stream.status());
      List<Frame> frames = stream.untilEnd(WAIT);
      assertEquals(BENCHMARK_SEQUENCE, types(frames));
      String id = frames.get(0).data().getString("submission_id");
      assertTrue(service.submission(id).getBoolean("cancel_on_disconnect"));
    }
  }

  @Test
  void replayResumesAfterLastEventIdFromHeaderOrQuery() throws Exception {
    String id = service.submit(alice, "// agent: ok");
    service.awaitFinished(id, WAIT);
    try (SseClient header = service.events(id, alice, Map.of("Last-Event-ID", "4"))) {
      List<Frame> frames = header.untilEnd(WAIT);
      assertEquals(BENCHMARK_SEQUENCE.subList(4, BENCHMARK_SEQUENCE.size()), types(frames));
      assertSequenceNumbers(frames, 5);
    }
    try (SseClient query = SseClient.open(service.port(), "GET",
        "/api/submissions/" + id + "/events?last_event_id=9", Map.of("Authorization", "Bearer " + alice), null)) {
      assertEquals(List.of("BENCHMARK_RESULT", "BENCHMARKED"), types(query.untilEnd(WAIT)));
    }
    try (SseClient all = service.events(id, alice, Map.of("Last-Event-ID", "11"))) {
      assertEquals(204, all.status(), "nothing after the terminal event: 204, so a standard client stops asking");
    }
  }

  @Test
  void replayMidRunThenLiveWithoutGapsOrDuplicates() throws Exception {
    String id = service.submit(alice, "// agent: ok\n// delay: 0.2");
    int seen;
    try (SseClient first = service.events(id, alice, Map.of())) {
      assertNotNull(first.nextOf("CHECKING", WAIT));
      seen = 4;
    }
    try (SseClient resumed = service.events(id, alice, Map.of("Last-Event-ID", String.valueOf(seen)))) {
      List<Frame> rest = resumed.untilEnd(WAIT);
      assertEquals(BENCHMARK_SEQUENCE.subList(seen, BENCHMARK_SEQUENCE.size()), types(rest));
      assertSequenceNumbers(rest, seen + 1);
    }
  }

  @Test
  void twoConcurrentSubscribersSeeTheSameEvents() throws Exception {
    String id = service.submit(alice, "// agent: ok\n// delay: 0.1");
    try (SseClient one = service.events(id, alice, Map.of()); SseClient two = service.events(id, alice, Map.of())) {
      List<Frame> a = one.untilEnd(WAIT);
      List<Frame> b = two.untilEnd(WAIT);
      assertEquals(BENCHMARK_SEQUENCE, types(a));
      assertEquals(a, b);
    }
  }

  @Test
  void heartbeatsKeepAnIdleStreamAlive() throws Exception {
    String id = service.submit(alice, "// agent: ok\n// delay: 1.2");
    try (SseClient stream = service.events(id, alice, Map.of())) {
      stream.untilEnd(WAIT);
      assertTrue(stream.heartbeats() >= 2, "heartbeats: " + stream.heartbeats());
    }
  }

  @Test
  void codeReachesTheAgentByteForByte() throws Exception {
    String code = String.join("\n",
        "// agent: ok",
        "// shell: $(rm -rf /) `id` ; echo pwned && exit 1 | cat > /tmp/x 2>&1 & ' \" \\ $HOME ${PATH}",
        "cat <<EOF",
        "EOF",
        "'EOF'",
        "---",
        "apiVersion: v1",
        "commands: [\"echo injected\"]",
        "key: |",
        "  multi-line: \"value\" # not a comment",
        "...",
        "unicode: \u00e9\u4e2d\u6587 \ud83d\ude80 tab:\t cr:\r nul-ish: \\0",
        "__global__ void solution(const float* in, float* out) {}",
        "");
    String id = service.submit(alice, code);
    service.awaitFinished(id, WAIT);
    byte[] received = Files.readAllBytes(service.dataDir().resolve("agent-work").resolve(id + ".code"));
    assertEquals(code, new String(received, java.nio.charset.StandardCharsets.UTF_8));
    assertEquals("BENCHMARKED", service.submission(id).getString("status"));
    Thread.sleep(500); // the folder goes once the agent's output is drained
    assertFalse(Files.exists(service.dataDir().resolve("runs").resolve(id)), "a local run's folder goes with it");
  }

  @Test
  void thePayloadCarriesNoInputSecret() throws Exception {
    // The judge makes the secret its inputs derive from in its own process: no other process ever holds it.
    String id = service.submit(alice, "// agent: payload-probe");
    List<Frame> frames;
    try (SseClient stream = service.events(id, alice, Map.of())) {
      frames = stream.untilEnd(WAIT);
    }
    JsonArray keys = frames.stream().filter(f -> f.event().equals("COMPILING")).findFirst().orElseThrow().data()
        .getJsonArray("keys");
    assertTrue(keys.contains("event_key") && keys.contains("code"), "the probe saw the payload: " + keys);
    assertFalse(keys.stream().anyMatch(k -> k.toString().contains("secret")), "no secret in the payload: " + keys);
  }

  @Test
  void agentCrashBecomesRuntimeErrorWithTheLogTail() throws Exception {
    String id = service.submit(alice, "// agent: crash");
    try (SseClient stream = service.events(id, alice, Map.of())) {
      List<Frame> frames = stream.untilEnd(WAIT);
      assertEquals(List.of("IN_QUEUE", "PROVISIONING", "COMPILING", "RUNTIME_ERROR"), types(frames));
      JsonObject error = frames.get(3).data();
      assertEquals(139, error.getInteger("exit_code"));
      assertTrue(error.getString("details").contains("Segmentation fault (core dumped)"), error.encode());
      assertTrue(error.getString("details").contains("compiling with nvcc (pretend)"), error.encode());
    }
    JsonObject stored = service.submission(id);
    assertEquals("RUNTIME_ERROR", stored.getJsonObject("error").getString("type"));
    assertTrue(stored.getJsonObject("error").getString("message").contains("139"));
  }

  @Test
  void agentExitingCleanlyWithoutAResultIsAnError() throws Exception {
    String id = service.submit(alice, "// agent: exit0");
    JsonObject stored = service.awaitFinished(id, WAIT);
    assertEquals("ERROR", stored.getString("status"));
    assertTrue(stored.getJsonObject("error").getString("message").contains("without reporting a result"));
  }

  @Test
  void garbageOutputIsIgnoredAndIllegalTransitionsDropped() throws Exception {
    String id = service.submit(alice, "// agent: garbage");
    try (SseClient stream = service.events(id, alice, Map.of())) {
      List<Frame> frames = stream.untilEnd(WAIT);
      assertEquals(BENCHMARK_SEQUENCE, types(frames));
      assertSequenceNumbers(frames, 1);
    }
    Thread.sleep(300);
    JsonObject stored = service.submission(id);
    assertEquals("BENCHMARKED", stored.getString("status"));
    JsonArray tests = stored.getJsonArray("test_results");
    assertEquals(2, tests.size(), "the out-of-phase and after-the-end results were dropped: " + tests);
  }

  @Test
  void listShowsOwnSubmissionsNewestFirstAndAdminSeesAll() throws Exception {
    String bob = service.userToken("bob");
    String first = service.submit(bob, "// agent: ok");
    service.awaitFinished(first, WAIT);
    String second = service.submit(bob, "// agent: ok");
    service.awaitFinished(second, WAIT);
    JsonArray own = service.get("/api/submissions?limit=10", bob).json().getJsonArray("submissions");
    assertEquals(2, own.size());
    assertEquals(second, own.getJsonObject(0).getString("id"));
    assertEquals(first, own.getJsonObject(1).getString("id"));
    JsonObject page = service.get("/api/submissions?limit=1", bob).json();
    assertEquals(1, page.getJsonArray("submissions").size());
    String before = page.getString("next_before");
    JsonArray next = service.get("/api/submissions?limit=1&before=" + before, bob).json().getJsonArray("submissions");
    assertEquals(first, next.getJsonObject(0).getString("id"));
    JsonArray everyone = service.get("/api/submissions?limit=200", TestService.ADMIN_TOKEN).json()
        .getJsonArray("submissions");
    assertTrue(everyone.stream().map(s -> ((JsonObject) s).getString("user_id")).toList().contains("alice"));
    assertEquals(404, service.get("/api/submissions/" + first, alice).status(), "not alice's");
  }

  @Test
  void healthAndCatalog() throws Exception {
    assertEquals(200, service.get("/health/live", null).status());
    Response ready = service.get("/health/ready", null);
    assertEquals(200, ready.status());
    assertEquals("UP", ready.json().getJsonObject("checks").getJsonObject("database").getString("status"));
    // No dstack CLI on this machine: the service is ready for local work and names what is missing.
    assertEquals("DEGRADED", ready.json().getString("status"), ready.body());
    assertEquals(new JsonArray().add("dstack"), ready.json().getJsonArray("failed"));
    // The local worker connects a moment after the start; until then, and for a grace after, it is not a failure.
    assertTrue(List.of("UP", "STARTING").contains(
        ready.json().getJsonObject("checks").getJsonObject("local-workers").getString("status")), ready.body());
    JsonArray problems = service.get("/api/problems", alice).json().getJsonArray("problems");
    assertTrue(problems.size() >= 8, problems.encode());
    JsonObject problem = problems.stream().map(p -> (JsonObject) p)
        .filter(p -> "leaky-relu".equals(p.getString("slug"))).findFirst().orElseThrow();
    assertEquals(List.of("input", "alpha", "output", "M", "N"), problem.getJsonArray("parameters").stream()
        .map(p -> ((JsonObject) p).getString("name")).toList());
    JsonArray activations = service.get("/api/problems?level=1&tag=activation&q=relu", alice).json()
        .getJsonArray("problems");
    assertEquals(List.of("leaky-relu", "relu"), activations.stream().map(p -> ((JsonObject) p).getString("slug"))
        .toList());
    Response badLevel = service.get("/api/problems?level=one", alice);
    assertEquals(400, badLevel.status());
    assertEquals("level", badLevel.json().getJsonArray("details").getJsonObject(0).getString("field"));
    JsonObject detail = service.get("/api/problems/leaky-relu", alice).json();
    assertTrue(detail.getJsonObject("starter").getString("cuda").contains("__global__ void solution("), detail.encode());
    assertEquals(404, service.get("/api/problems/no-such-problem", alice).status());
    // The H100 baselines the service ships (conf/baselines/H100.json), loaded at the start.
    JsonArray shipped = service.get("/api/baselines?gpu_type=H100&problem=leaky-relu", alice).json()
        .getJsonArray("baselines");
    assertEquals(List.of("eager", "torch_compile"), shipped.stream().map(b -> ((JsonObject) b).getString("method"))
        .toList(), shipped.encode());
    JsonObject gpu = service.get("/api/gpu-types", alice).json().getJsonArray("gpu_types").getJsonObject(0);
    assertEquals("local", gpu.getString("name"));
    assertEquals(2, gpu.getInteger("capacity"));
    assertTrue(service.get("/metrics", null).body().contains("kernel_runner_sse_streams_open"));
  }
}
