package dev.kernelrunner.flow;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.kernelrunner.support.Processes;
import dev.kernelrunner.support.TempDirs;
import dev.kernelrunner.support.TestAgents;
import dev.kernelrunner.support.TestService;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.junit5.VertxExtension;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * LOCAL_WORKERS=true (the default): the service starts this host's workers itself (the real worker, running AGENT_COMMAND, the
 * fake agent, once per job), one slot per LOCAL_MAX_CONCURRENT, with a token of their own; submissions go through
 * them like any worker's; stopping the service stops them.
 */
@ExtendWith(VertxExtension.class)
class LocalWorkersTest {
  private static final Duration WAIT = Duration.ofSeconds(60);

  @Test
  void localGpusAreServedByWorkersTheServiceStartsAndStops(Vertx vertx) throws Exception {
    TestService service = TestService.start(vertx, Map.of("LOCAL_MAX_CONCURRENT", "2",
        "AGENT_ENV", "PYTHONPATH=" + TestAgents.path("remote-agent"), "MAX_ACTIVE_PER_USER", "10"));
    List<Long> pids;
    try {
      String token = service.userToken("lou");
      long deadline = System.nanoTime() + WAIT.toNanos();
      JsonObject local = null;
      while (System.nanoTime() < deadline) {
        local = service.get("/api/gpu-types", token).json().getJsonArray("gpu_types").getJsonObject(0);
        if (local.getInteger("capacity") == 2) {
          break;
        }
        Thread.sleep(100);
      }
      assertEquals("worker", local.getString("backend"), local.encode());
      assertEquals(2, local.getInteger("capacity"), "one worker per slot: " + local.encode());

      String a = service.submit(token, "// agent: ok\n// delay: 0.2");
      String b = service.submit(token, "// agent: ok\n// delay: 0.2");
      assertEquals("BENCHMARKED", service.awaitFinished(a, WAIT).getString("status"));
      assertEquals("BENCHMARKED", service.awaitFinished(b, WAIT).getString("status"));
      assertEquals("worker", service.submission(a).getString("backend"));

      // A job is done when its worker's exit is taken, which follows the stored result: wait for both.
      JsonArray workers = workers(service);
      long until = System.nanoTime() + WAIT.toNanos();
      while (jobsDone(workers) < 2 && System.nanoTime() < until) {
        Thread.sleep(50);
        workers = workers(service);
      }
      assertEquals(2, workers.size(), workers.encode());
      for (Object worker : workers) {
        assertEquals("local-workers", ((JsonObject) worker).getString("token_user"));
      }
      assertEquals(2, jobsDone(workers), workers.encode());
      pids = ProcessHandle.allProcesses()
          .filter(p -> p.info().commandLine().orElse("").contains("remote_agent worker")
              && p.info().commandLine().orElse("").contains("127.0.0.1:" + service.port()))
          .map(ProcessHandle::pid).toList();
      assertFalse(pids.isEmpty(), "the worker process runs");
    } finally {
      service.close();
    }
    long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
    while (pids.stream().anyMatch(Processes::alive) && System.nanoTime() < deadline) {
      Thread.sleep(50);
    }
    assertTrue(pids.stream().noneMatch(Processes::alive), "the workers stopped with the service");
    assertTrue(Files.exists(service.dataDir().resolve("runs/local-workers/local.log")), "the worker's log is kept");
  }

  private static JsonArray workers(TestService service) throws Exception {
    return service.get("/api/admin/workers", TestService.ADMIN_TOKEN).json().getJsonArray("workers");
  }

  private static int jobsDone(JsonArray workers) {
    return workers.stream().mapToInt(worker -> ((JsonObject) worker).getInteger("jobs_done")).sum();
  }

  /**
   * A local worker that cannot start (here its command is `false`) would leave its type's submissions waiting for
   * ever: after three ends in a row within seconds of their start, what waits ends as ERROR saying why.
   */
  @Test
  void submissionsForALocalWorkerThatCannotStartEndAsErrors(Vertx vertx) throws Exception {
    try (TestService service = TestService.start(vertx, Map.of("LOCAL_WORKER_COMMAND", "false"))) {
      String token = service.userToken("max");
      String id = service.submit(token, "// agent: ok");
      JsonObject ended = service.awaitFinished(id, WAIT);
      assertEquals("ERROR", ended.getString("status"), ended.encode());
      String message = ended.getJsonObject("error").getString("message");
      assertTrue(message.contains("worker for local does not start"), message);
    }
  }

  /**
   * The service stops its local workers when it stops, and their jobs with them: after a restart such a job is put
   * back in line at once (reason "restarted", once), as a child process's was, not after WORKER_LOST_SECONDS.
   */
  @Test
  void aLocalJobCutShortByARestartIsRequeuedAtOnce(Vertx vertx) throws Exception {
    String databaseUrl = dev.kernelrunner.support.TestDatabase.freshDatabase();
    Path dataDir = TempDirs.directory("kr-local-restart");
    Map<String, String> env = Map.of("WORKER_LOST_SECONDS", "300", "AGENT_ENV",
        "PYTHONPATH=" + TestAgents.path("remote-agent"));
    TestService first = TestService.start(vertx, env, databaseUrl, dataDir);
    String token = first.userToken("nia");
    String running = first.submit(token, "// agent: ok\n// delay: 0.5");
    try (dev.kernelrunner.support.SseClient stream = first.events(running, token, Map.of())) {
      stream.nextOf("COMPILING", WAIT);
    }
    first.stop();
    try (TestService second = TestService.start(vertx, env, databaseUrl, dataDir)) {
      JsonObject ended = second.awaitFinished(running, WAIT);
      assertEquals("BENCHMARKED", ended.getString("status"), ended.encode());
      assertEquals(1, ended.getInteger("restart_count"));
      try (dev.kernelrunner.support.SseClient all = second.events(running, token, Map.of())) {
        assertTrue(all.untilEnd(WAIT).stream().anyMatch(f -> "restarted".equals(f.data().getString("reason"))),
            "re-queued as restarted");
      }
    }
  }
}
