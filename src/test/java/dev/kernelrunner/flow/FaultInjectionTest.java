package dev.kernelrunner.flow;

import static dev.kernelrunner.support.SseClient.types;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.kernelrunner.store.EmbeddedPostgres;
import dev.kernelrunner.support.Processes;
import dev.kernelrunner.support.PullWorkers;
import dev.kernelrunner.support.SseClient;
import dev.kernelrunner.support.SseClient.Frame;
import dev.kernelrunner.support.TempDirs;
import dev.kernelrunner.support.TestService;
import dev.kernelrunner.support.TestService.Response;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonObject;
import io.vertx.junit5.VertxExtension;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Faults injected into a running service: its own PostgreSQL cluster stopped and started again mid-run, text
 * PostgreSQL cannot store, in code and in events. Whatever fails, every submission ends, nothing is lost or
 * stored twice, and one submission's trouble is no one else's.
 */
@ExtendWith(VertxExtension.class)
class FaultInjectionTest {
  private static final Duration WAIT = Duration.ofSeconds(60);
  private static EmbeddedPostgres cluster;

  @BeforeAll
  static void startCluster() throws Exception {
    cluster = EmbeddedPostgres.start(TempDirs.directory("kr-faults"));
  }

  @AfterAll
  static void stopCluster() {
    cluster.close();
  }

  private static TestService start(Vertx vertx, Map<String, String> overrides) throws Exception {
    return TestService.start(vertx, overrides, cluster.createDatabase("f_" + System.nanoTime()),
        TempDirs.directory("kr-faults-data"));
  }

  @Test
  void aDatabaseRestartMidRunLosesNothingAndFreesTheQuota(Vertx vertx) throws Exception {
    try (TestService service = start(vertx, Map.of("MAX_ACTIVE_PER_USER", "1"))) {
      String token = service.userToken("dora");
      String id = service.submit(token, "// agent: ok\n// delay: 0.4");
      try (SseClient live = service.events(id, token, Map.of())) {
        live.nextOf("COMPILING", WAIT);
      }
      cluster.close();
      try {
        Thread.sleep(4000); // the agent goes on and ends while the database is away
      } finally {
        cluster.restart();
      }
      JsonObject finished = service.awaitFinished(id, WAIT);
      assertEquals("BENCHMARKED", finished.getString("status"), finished.encode());
      try (SseClient replay = service.events(id, token, Map.of())) {
        List<Frame> frames = replay.untilEnd(WAIT);
        assertEquals(IntStream.rangeClosed(1, frames.size()).boxed().toList(),
            frames.stream().map(Frame::id).toList(), "every event once, in order: " + types(frames));
        assertEquals(List.of("IN_QUEUE", "PROVISIONING", "COMPILING", "CHECKING", "TEST_RESULT", "TEST_RESULT",
            "CHECKED", "BENCHMARKING", "BENCHMARK_RESULT", "BENCHMARK_RESULT", "BENCHMARKED"), types(frames));
      }
      assertEquals(201, service.post("/api/submissions", token,
          TestService.submission("// agent: ok", "check").encode()).status(), "the quota slot is free again");
    }
  }

  /**
   * Issue 27's fourth stuck case: the database away between BENCHMARKED and its VERIFIED. The verdict is stored
   * when the database is back, the submission ends with it, and its GPU slot serves the next one.
   */
  @Test
  void aDatabaseAwayBetweenAResultAndItsVerdictStoresTheVerdictAndFreesTheSlot(Vertx vertx) throws Exception {
    try (TestService service = start(vertx, Map.of("LOCAL_MAX_CONCURRENT", "1"))) {
      String token = service.userToken("vera");
      String id = service.submit(token, "// agent: ok\n// delay: 0.05\n// timing: verified\n// verdict-after: 2");
      long deadline = System.nanoTime() + WAIT.toNanos();
      service.awaitStatus(id, "BENCHMARKED", WAIT);
      cluster.close();
      try {
        Thread.sleep(5000); // the verdict comes 2 s after the result, with the database away
      } finally {
        cluster.restart();
      }
      JsonObject timing = null;
      while (System.nanoTime() < deadline) {
        timing = service.submission(id).getJsonObject("result").getJsonObject("verification")
            .getJsonObject("timing");
        if (!"pending".equals(timing.getString("status"))) {
          break;
        }
        Thread.sleep(100);
      }
      assertEquals("verified", timing.getString("status"), "the verdict was stored: " + timing);
      String next = service.submit(token, "// agent: ok\n// delay: 0.02");
      assertEquals("BENCHMARKED", service.awaitFinished(next, WAIT).getString("status"), "the slot is free");
      try (SseClient replay = service.events(id, token, Map.of())) {
        List<Frame> frames = replay.untilEnd(WAIT);
        assertEquals("VERIFIED", frames.get(frames.size() - 1).event(), types(frames).toString());
        assertTrue(replay.ended(), "its stream ends");
      }
    }
  }

  /**
   * Issue 27's second and third stuck cases: the service stopped (a restart; a kill -9 leaves the same rows) while a
   * result's timing verdict was still to come. The agent that would have sent it went with the service: the
   * service that starts next records the verdict as never checked, and the result's stream ends.
   */
  @Test
  void aRestartWhileAVerdictIsPendingRecordsItNeverCheckedAndTheStreamEnds(Vertx vertx) throws Exception {
    String database = cluster.createDatabase("f_" + System.nanoTime());
    Path dataDir = TempDirs.directory("kr-faults-data");
    String id;
    String token;
    try (TestService service = TestService.start(vertx, Map.of(), database, dataDir)) {
      token = service.userToken("rhea");
      id = service.submit(token, "// agent: ok\n// delay: 0.02\n// timing: verified\n// verdict-after: 30");
      service.awaitStatus(id, "BENCHMARKED", WAIT);
    }
    try (TestService again = TestService.start(vertx, Map.of(), database, dataDir)) {
      try (SseClient stream = again.events(id, token, Map.of())) {
        List<Frame> frames = stream.untilEnd(WAIT);
        assertEquals("VERIFIED", frames.get(frames.size() - 1).event(), types(frames).toString());
        assertEquals("not_checked", frames.get(frames.size() - 1).data().getJsonObject("timing").getString("status"));
        assertTrue(stream.ended(), "the stream ends: nothing more will come");
      }
      assertEquals("not_checked", again.submission(id).getJsonObject("result").getJsonObject("verification")
          .getJsonObject("timing").getString("status"));
    }
  }

  /**
   * Issue 27's fifth stuck case: a worker lost while the database is away. The re-queue is held and stored in its
   * turn like any event, the second run's events after it, and the submission ends once, with its result.
   */
  @Test
  void aWorkerLostWhileTheDatabaseIsAwayIsRequeuedAndTheSecondRunsResultIsStored(Vertx vertx) throws Exception {
    int port = dev.kernelrunner.support.Ports.free();
    String gpu = "fault-gpu";
    try (TestService service = start(vertx, Map.of("WORKER_GPU_TYPES", gpu, "WORKER_LOST_SECONDS", "2",
        "HTTP_PORT", String.valueOf(port), "LOCAL_GPU_TYPES", ""))) {
      String workerToken = service.post("/api/admin/tokens", TestService.ADMIN_TOKEN, new JsonObject()
          .put("user_id", "gpu-box").put("role", "worker").encode()).json().getString("token");
      String token = service.userToken("lena");
      Process first = PullWorkers.start(service, port, workerToken, gpu, "lost-1", true);
      Process second = null;
      try {
        Response created = service.post("/api/submissions", token,
            TestService.submission("// agent: ok\n// delay: 0.5", "benchmark").put("gpu_type", gpu).encode());
        assertEquals(201, created.status(), created.body());
        String id = created.json().getString("id");
        service.awaitStatus(id, "CHECKING", WAIT);
        cluster.close();
        try {
          PullWorkers.killTree(first);
          Thread.sleep(4000); // lost after 2 s, re-queued while the database is away
          second = PullWorkers.start(service, port, workerToken, gpu, "lost-2", true);
          Thread.sleep(1000);
        } finally {
          cluster.restart();
        }
        JsonObject finished = service.awaitFinished(id, WAIT);
        assertEquals("BENCHMARKED", finished.getString("status"), finished.encode());
        assertEquals(1, finished.getInteger("restart_count"));
        try (SseClient replay = service.events(id, token, Map.of())) {
          List<Frame> frames = replay.untilEnd(WAIT);
          assertEquals(IntStream.rangeClosed(1, frames.size()).boxed().toList(),
              frames.stream().map(Frame::id).toList(), "every event once, in order: " + types(frames));
          assertTrue(frames.stream().anyMatch(f -> "worker_lost".equals(f.data().getString("reason"))),
              types(frames).toString());
          assertEquals("BENCHMARKED", frames.get(frames.size() - 1).event());
        }
      } finally {
        for (Process worker : java.util.Arrays.asList(first, second)) {
          if (worker != null) {
            PullWorkers.killTree(worker);
          }
        }
      }
    }
  }

  @Test
  void eventsThatCannotBeStoredInTimeEndTheRunAsErrorAndStopIt(Vertx vertx) throws Exception {
    // The child-process backend (LOCAL_WORKERS=false): the test reads the agent pid the registry stores.
    try (TestService service = start(vertx, Map.of("EVENT_WRITE_RETRY_SECONDS", "2", "LOCAL_WORKERS", "false"))) {
      String token = service.userToken("erin");
      // An event every 50 ms for a minute: events keep coming while none can be stored.
      String id = service.submit(token, "// agent: flood\n// events: 1200\n// size: 10\n// pause: 0.05");
      long agentPid;
      try (SseClient live = service.events(id, token, Map.of())) {
        live.nextOf("CHECKING", WAIT);
      }
      agentPid = service.submission(id).getLong("pid");
      assertTrue(Processes.alive(agentPid));
      cluster.close();
      try {
        Thread.sleep(5000);
        assertFalse(Processes.alive(agentPid), "the run is stopped once its events cannot be stored");
      } finally {
        cluster.restart();
      }
      JsonObject finished = service.awaitFinished(id, WAIT);
      assertEquals("ERROR", finished.getString("status"), finished.encode());
      assertTrue(finished.getJsonObject("error").getString("message").contains("could not store"),
          finished.encode());
      Response cancel = service.post("/api/submissions/" + id + "/cancel", token, "");
      assertEquals(409, cancel.status(), "it has ended: " + cancel);
    }
  }

  @Test
  void aCancelAfterAnOutageStopsTheRunAndStaysCancelledAcrossARestart(Vertx vertx) throws Exception {
    String database = cluster.createDatabase("f_" + System.nanoTime());
    Path dataDir = TempDirs.directory("kr-faults-data");
    String id;
    String token;
    long agentPid;
    Map<String, String> childProcesses = Map.of("LOCAL_WORKERS", "false"); // it reads the registry's agent pid
    try (TestService service = TestService.start(vertx, childProcesses, database, dataDir)) {
      token = service.userToken("hugo");
      id = service.submit(token, "// agent: flood\n// events: 1200\n// size: 10\n// pause: 0.05");
      try (SseClient live = service.events(id, token, Map.of())) {
        live.nextOf("CHECKING", WAIT);
      }
      agentPid = service.submission(id).getLong("pid");
      cluster.close();
      try {
        Thread.sleep(2000); // events pile up, held in order
      } finally {
        cluster.restart();
      }
      Response cancel = service.post("/api/submissions/" + id + "/cancel", token, "");
      assertEquals(202, cancel.status(), cancel.body());
      assertEquals("CANCELLED", service.awaitFinished(id, WAIT).getString("status"));
      assertFalse(Processes.alive(agentPid), "cancel really stopped it");
    }
    try (TestService again = TestService.start(vertx, childProcesses, database, dataDir)) {
      Thread.sleep(1000);
      JsonObject after = again.submission(id);
      assertEquals("CANCELLED", after.getString("status"), "not run again after a restart: " + after.encode());
      assertEquals(0, after.getInteger("restart_count"));
    }
  }

  @Test
  void nulInEventsIsStoredReplacedAndCostsNoOtherSubmissionAnything(Vertx vertx) throws Exception {
    try (TestService service = start(vertx, Map.of("LOCAL_MAX_CONCURRENT", "4", "MAX_ACTIVE_PER_USER", "10"))) {
      String token = service.userToken("finn");
      String nul = service.submit(token, "// agent: nul");
      List<String> others = List.of(service.submit(token, "// agent: ok"), service.submit(token, "// agent: ok"),
          service.submit(token, "// agent: ok"));
      JsonObject stored = service.awaitFinished(nul, WAIT);
      assertEquals("BENCHMARKED", stored.getString("status"), stored.encode());
      String name = stored.getJsonArray("test_results").getJsonObject(0).getString("name");
      assertEquals("a\uFFFDb", name);
      for (String other : others) {
        JsonObject done = service.awaitFinished(other, WAIT);
        assertEquals("BENCHMARKED", done.getString("status"));
        try (SseClient replay = service.events(other, token, Map.of())) {
          // IN_QUEUE once or more: a worker takes a job once it is free, and each position change is said.
          List<Frame> frames = replay.untilEnd(WAIT);
          assertEquals("IN_QUEUE", frames.get(0).event());
          assertEquals(10, frames.stream().filter(f -> !"IN_QUEUE".equals(f.event())).count(),
              "no event of another submission was lost: " + frames);
        }
      }
    }
  }

  @Test
  void nulInCodeIsABadRequestNamingTheField(Vertx vertx) throws Exception {
    try (TestService service = start(vertx, Map.of())) {
      String token = service.userToken("gail");
      Response refused = service.post("/api/submissions", token,
          TestService.submission("int a;\u0000 // agent: ok", "check").encode());
      assertEquals(400, refused.status(), refused.body());
      assertEquals("code", refused.json().getJsonArray("details").getJsonObject(0).getString("field"));
      assertEquals(201, service.post("/api/submissions", token,
          TestService.submission("// agent: ok", "check").encode()).status());
    }
  }

}
