package dev.kernelrunner.flow;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.kernelrunner.support.FakeDstack;
import dev.kernelrunner.support.Ports;
import dev.kernelrunner.support.TestService;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonObject;
import io.vertx.junit5.VertxExtension;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * DSTACK_WORKER_MODE=persistent against the fake dstack server, which really runs each run's commands: the
 * service starts a worker run when work waits, the real worker ({@code python3 -m remote_agent worker}, running
 * the fake agent per job) connects back to PUBLIC_URL with its own token, an idle run is stopped and its token
 * revoked, and a run that dies mid-job is replaced and the job re-queued once.
 */
@ExtendWith(VertxExtension.class)
class WorkerRunsTest {
  private static final Duration WAIT = Duration.ofSeconds(60);

  @TempDir
  Path agentDir;

  private TestService start(Vertx vertx, FakeDstack fake) throws Exception {
    // The folder sent with each worker run: the real worker package and the test agent it runs per job.
    copy(Path.of("remote-agent/remote_agent"), agentDir.resolve("remote_agent"));
    Files.copy(FakeDstack.AGENTS.resolve("fake_agent.py"), agentDir.resolve("fake_agent.py"));
    int port = Ports.free();
    Map<String, String> env = new HashMap<>(fake.serviceEnv());
    env.putAll(Map.of("DSTACK_WORKER_MODE", "persistent", "HTTP_PORT", String.valueOf(port),
        "PUBLIC_URL", "http://127.0.0.1:" + port, "DSTACK_AGENT_DIR", agentDir.toString(),
        "DSTACK_WORKER_COMMAND", "python3 -m remote_agent worker --job-command \"python3 $PWD/fake_agent.py\"",
        "AMD_FLEET_IDLE_DURATION", "3s", "WORKER_LOST_SECONDS", "2"));
    return TestService.start(vertx, env);
  }

  private static void copy(Path from, Path to) throws Exception {
    try (var files = Files.walk(from)) {
      for (Path file : files.filter(f -> !f.toString().contains("__pycache__")).toList()) {
        Path target = to.resolve(from.relativize(file).toString());
        if (Files.isDirectory(file)) {
          Files.createDirectories(target);
        } else {
          Files.copy(file, target);
        }
      }
    }
  }

  private static String submit(TestService service, String token, String code) throws Exception {
    TestService.Response created = service.post("/api/submissions", token,
        TestService.submission(code, "benchmark").put("gpu_type", "MI300X").encode());
    assertEquals(201, created.status(), created.body());
    return created.json().getString("id");
  }

  private static void await(String what, Callable<Boolean> done) throws Exception {
    long deadline = System.nanoTime() + WAIT.toNanos();
    while (!done.call()) {
      if (System.nanoTime() > deadline) {
        throw new AssertionError("not within " + WAIT + ": " + what);
      }
      Thread.sleep(100);
    }
  }

  private static List<String> workerRuns(FakeDstack fake) throws Exception {
    return fake.runs().fieldNames().stream().filter(name -> name.startsWith("kr-w-")).sorted().toList();
  }

  private static String status(FakeDstack fake, String run) throws Exception {
    return fake.runs().getJsonObject(run).getString("status");
  }

  @Test
  void aRunIsStartedForQueuedWorkItsWorkerServesItAndAnIdleRunIsStopped(Vertx vertx) throws Exception {
    try (FakeDstack fake = FakeDstack.start(new JsonObject()); TestService service = start(vertx, fake)) {
      String token = service.userToken("ada");
      JsonObject type = service.get("/api/gpu-types", token).json().getJsonArray("gpu_types").stream()
          .map(JsonObject.class::cast).filter(t -> "MI300X".equals(t.getString("name"))).findFirst().orElseThrow();
      assertEquals("worker", type.getString("backend"));
      assertTrue(workerRuns(fake).isEmpty(), "nothing runs before work comes");

      String id = submit(service, token, "// agent: ok");
      JsonObject done = service.awaitFinished(id, WAIT);
      assertEquals("BENCHMARKED", done.getString("status"), done.encode());
      List<String> runs = workerRuns(fake);
      assertEquals(1, runs.size(), runs.toString());
      String run = runs.get(0);
      JsonObject spec = fake.runs().getJsonObject(run).getJsonObject("run_spec", new JsonObject());
      assertTrue(spec.encode().contains("--server http://127.0.0.1:" + service.port()), spec.encode());

      // A second submission goes to the same worker: no new run.
      assertEquals("BENCHMARKED", service.awaitFinished(submit(service, token, "// agent: ok"), WAIT)
          .getString("status"));
      assertEquals(List.of(run), workerRuns(fake));

      // Idle for AMD_FLEET_IDLE_DURATION (3 s): stopped, and its token revoked.
      await("the idle run stops", () -> List.of("terminated", "done", "failed").contains(status(fake, run)));
      await("its token is revoked", () -> service.get("/api/admin/tokens", TestService.ADMIN_TOKEN).json()
          .getJsonArray("tokens").stream().map(JsonObject.class::cast)
          .anyMatch(t -> run.equals(t.getString("user_id")) && t.getString("revoked_at") != null));
    }
  }

  @Test
  void aRunThatDiesMidJobIsReplacedAndItsJobRunsAgain(Vertx vertx) throws Exception {
    try (FakeDstack fake = FakeDstack.start(new JsonObject()); TestService service = start(vertx, fake)) {
      String token = service.userToken("bob");
      String id = submit(service, token, "// agent: ok\n// delay: 0.5");
      await("the job runs", () -> "CHECKING".equals(service.submission(id).getString("status")));
      String first = workerRuns(fake).get(0);
      fake.api("/api/project/main/runs/stop", new JsonObject().put("runs_names", List.of(first)).put("abort", true));
      JsonObject done = service.awaitFinished(id, WAIT);
      assertEquals("BENCHMARKED", done.getString("status"), done.encode());
      assertEquals(1, done.getInteger("restart_count"), "re-queued once");
      List<String> runs = workerRuns(fake);
      assertEquals(2, runs.size(), "a new run replaced the dead one: " + runs);
    }
  }
}
