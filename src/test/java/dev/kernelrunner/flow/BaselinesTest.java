package dev.kernelrunner.flow;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.kernelrunner.support.TempDirs;
import dev.kernelrunner.support.TestService;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.junit5.VertxExtension;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Baselines (issue 30): the files of BASELINES_DIR stored at the start, versioned (a newer measurement becomes the
 * current one, the older stays), a result's speedup over each current baseline of its GPU type, and the export in
 * KernelBench's seed format.
 */
@ExtendWith(VertxExtension.class)
class BaselinesTest {

  /** A baselines file (remote-agent/selftest/baselines.py's form) for leaky-relu on the local type. */
  private static JsonObject file(String measuredAt, double eager) {
    JsonObject tests = new JsonObject();
    JsonObject compiled = new JsonObject();
    int i = 1;
    for (String name : new String[] {"n = 1024", "n = 65536"}) {
      tests.put(name, figures(eager * i));
      compiled.put(name, figures(0.5 * i));
      i++;
    }
    return new JsonObject().put("gpu_type", "local").put("hardware", "Test GPU").put("driver", "1").put("torch", "2")
        .put("triton", "3").put("cuda", "13").put("measured_at", measuredAt)
        .put("problems", new JsonObject().put("leaky-relu", new JsonObject().put("float32",
            new JsonObject().put("eager", tests).put("torch_compile", compiled))));
  }

  private static JsonObject figures(double median) {
    return new JsonObject().put("median", median).put("mean", median).put("std", 0.0).put("min", median)
        .put("max", median).put("samples", 101);
  }

  /** The caller's fast_p on the local type over a stored baseline, once the result's verdict is in. */
  private static JsonObject storedFastP(TestService service, String user, String method) throws Exception {
    long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
    while (true) {
      JsonObject shares = service.get("/api/me", user).json().getJsonObject("fast_p").getJsonObject("baselines")
          .getJsonObject(method).getJsonObject("gpu_types").getJsonObject("local");
      if (shares != null || System.nanoTime() > deadline) {
        return shares == null ? new JsonObject() : shares;
      }
      Thread.sleep(100);
    }
  }

  @Test
  void baselinesAreStoredVersionedAndGiveEachResultItsSpeedups(Vertx vertx) throws Exception {
    Path dir = TempDirs.directory("baselines");
    Files.writeString(dir.resolve("a-local.json"), file("2026-11-01T00:00:00Z", 1.0).encode());
    Map<String, String> env = Map.of("BASELINES_DIR", dir.toString());
    TestService service = TestService.start(vertx, env);
    String user = service.userToken("bea");
    // The fake agent's tests take 0.5 and 1.0 ms: 2x eager's 1.0 and 2.0, 1x torch.compile's 0.5 and 1.0.
    String id = service.submit(user, "// agent: ok\n// runtime: 0.5\n// timing: verified");
    service.awaitFinished(id, Duration.ofSeconds(60));
    JsonObject speedups = service.get("/api/submissions/" + id, user).json().getJsonObject("result")
        .getJsonObject("baseline_speedups");
    assertEquals(2.0, speedups.getDouble("eager"), 1e-9, speedups.encode());
    assertEquals(1.0, speedups.getDouble("torch_compile"), 1e-9, speedups.encode());
    JsonObject seed = service.get("/api/baselines/export?gpu_type=local&method=eager", user).json();
    assertEquals(new JsonObject().put("mean", 2.0).put("std", 0.0).put("min", 2.0).put("max", 2.0)
        .put("num_trials", 101).put("hardware", "Test GPU").put("device", "cuda:0"),
        seed.getJsonObject("level1").getJsonObject("leaky-relu"), "the largest test, KernelBench's fields");
    // fast_p over the stored baselines: 2x eager (over 1x, not over 2x), 1x torch.compile (not over 1x).
    JsonObject eagerShares = storedFastP(service, user, "eager");
    assertEquals(1, eagerShares.getInteger("solved"), eagerShares.encode());
    assertTrue(eagerShares.getDouble("fast_1") > 0 && eagerShares.getDouble("fast_2") == 0, eagerShares.encode());
    JsonObject compiledShares = storedFastP(service, user, "torch_compile");
    assertEquals(0.0, compiledShares.getDouble("fast_1"), compiledShares.encode());
    TestService.Response bad = service.get("/api/baselines/export?gpu_type=local&method=fast", user);
    assertEquals(400, bad.status());
    assertEquals("method", bad.json().getJsonArray("details").getJsonObject(0).getString("field"));

    // A re-measure, loaded at the next start: it becomes the current one; the first stays, and loads once.
    Path dataDir = service.dataDir();
    String database = service.databaseUrl();
    service.close();
    Files.writeString(dir.resolve("b-local.json"), file("2026-11-20T00:00:00Z", 4.0).encode());
    service = TestService.start(vertx, env, database, dataDir);
    try {
      JsonArray current = service.get("/api/baselines?gpu_type=local", user).json().getJsonArray("baselines");
      assertEquals(2, current.size(), current.encode());
      JsonObject eager = current.stream().map(b -> (JsonObject) b)
          .filter(b -> "eager".equals(b.getString("method"))).findFirst().orElseThrow();
      assertEquals("b-local.json", eager.getString("source"));
      assertTrue(eager.getString("measured_at").startsWith("2026-11-20"), eager.encode());
      assertEquals(8.0, service.get("/api/submissions/" + id, user).json().getJsonObject("result")
          .getJsonObject("baseline_speedups").getDouble("eager"), 1e-9, "against the current baseline");
      JsonObject shares = storedFastP(service, user, "eager");
      assertEquals(shares.getDouble("fast_0"), shares.getDouble("fast_2"), "8x the current eager baseline");
      assertEquals(0, service.get("/api/baselines?gpu_type=MI300X", user).json().getJsonArray("baselines").size());
    } finally {
      service.close();
    }
  }

  /** The current baselines of one problem on the local type, by method. */
  private static java.util.Map<String, JsonObject> current(TestService service, String token, String problem)
      throws Exception {
    java.util.Map<String, JsonObject> found = new java.util.TreeMap<>();
    service.get("/api/baselines?gpu_type=local&problem=" + problem, token).json().getJsonArray("baselines")
        .forEach(b -> found.put(((JsonObject) b).getString("method"), (JsonObject) b));
    return found;
  }

  @Test
  void anAdminMeasuresThemAnewThroughTheQueueAsJobsOfNoUsersQuota(Vertx vertx) throws Exception {
    Path dir = TempDirs.directory("baselines");
    Files.writeString(dir.resolve("a-local.json"), file("2026-11-01T00:00:00Z", 1.0).encode());
    // One unfinished submission a user: three baseline jobs at once are no user's.
    Map<String, String> env = Map.of("BASELINES_DIR", dir.toString(), "MAX_ACTIVE_PER_USER", "1");
    TestService service = TestService.start(vertx, env);
    String admin = TestService.ADMIN_TOKEN;
    String user = service.userToken("cid");

    TestService.Response refused = service.post("/api/admin/baselines", user,
        new JsonObject().put("gpu_type", "local").encode());
    assertEquals(403, refused.status(), refused.body());
    TestService.Response bad = service.post("/api/admin/baselines", admin, new JsonObject().put("gpu_type", "local")
        .put("problems", new JsonArray().add("leaky-relu").add("no-such-problem")).encode());
    assertEquals(400, bad.status(), bad.body());
    assertEquals("problems[1]", bad.json().getJsonArray("details").getJsonObject(0).getString("field"));
    TestService.Response noType = service.post("/api/admin/baselines", admin, new JsonObject().encode());
    assertEquals("gpu_type", noType.json().getJsonArray("details").getJsonObject(0).getString("field"));
    // A user cannot make a baseline job of a submission (it would store its figures as the baselines).
    TestService.Response asBaseline = service.post("/api/submissions", user,
        TestService.submission("// agent: ok", "baseline").encode());
    assertEquals(400, asBaseline.status(), asBaseline.body());
    assertEquals("mode", asBaseline.json().getJsonArray("details").getJsonObject(0).getString("field"));

    TestService.Response queued = service.post("/api/admin/baselines", admin, new JsonObject().put("gpu_type", "local")
        .put("problems", new JsonArray().add("leaky-relu").add("conv-1d").add("softmax")).encode());
    assertEquals(202, queued.status(), queued.body());
    JsonArray jobs = queued.json().getJsonArray("jobs");
    assertEquals(3, jobs.size(), jobs.encode());
    String leaky = jobs.getJsonObject(0).getString("id");
    assertEquals("leaky-relu", jobs.getJsonObject(0).getString("problem"));
    assertEquals("float32", jobs.getJsonObject(0).getString("dtype"));
    JsonObject ended = service.awaitFinished(leaky, Duration.ofSeconds(60));
    assertEquals("BASELINED", ended.getString("status"), ended.encode());
    assertEquals("baseline", ended.getString("mode"));
    JsonObject failed = service.awaitFinished(jobs.getJsonObject(1).getString("id"), Duration.ofSeconds(60));
    assertEquals("ERROR", failed.getString("status"), "conv-1d's baseline failed: " + failed.encode());
    service.awaitFinished(jobs.getJsonObject(2).getString("id"), Duration.ofSeconds(60));

    // The job's figures are the newest, current baselines; the file's are kept, and a failed job changes nothing.
    long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
    java.util.Map<String, JsonObject> now = current(service, user, "leaky-relu");
    while (!("job " + leaky).equals(now.get("eager").getString("source")) && System.nanoTime() < deadline) {
      Thread.sleep(100);
      now = current(service, user, "leaky-relu");
    }
    assertEquals("job " + leaky, now.get("eager").getString("source"), now.toString());
    assertEquals(2.0, now.get("eager").getJsonObject("tests").getJsonObject("n = 1024").getDouble("median"));
    assertEquals(2.0, now.get("torch_compile").getJsonObject("tests").getJsonObject("n = 65536")
        .getDouble("median"));
    assertEquals("local", now.get("eager").getString("gpu_type"), "the job's GPU type");
    assertEquals("Test GPU", now.get("eager").getJsonObject("hardware").getString("hardware"));
    assertTrue(current(service, user, "conv-1d").isEmpty());
    // A user's result is compared with the new figures: 0.5 and 1.0 ms against eager's 2 and 4, torch.compile's
    // 1 and 2.
    String id = service.submit(user, "// agent: ok\n// runtime: 0.5\n// timing: verified");
    service.awaitFinished(id, Duration.ofSeconds(60));
    JsonObject speedups = service.get("/api/submissions/" + id, user).json().getJsonObject("result")
        .getJsonObject("baseline_speedups");
    assertEquals(4.0, speedups.getDouble("eager"), 1e-9, speedups.encode());
    assertEquals(2.0, speedups.getDouble("torch_compile"), 1e-9, speedups.encode());
    // The admin sees its jobs; a user does not.
    assertEquals(200, service.get("/api/submissions/" + leaky, admin).status());
    assertEquals(404, service.get("/api/submissions/" + leaky, user).status());

    // Figures of a job that ended while they could not be stored are stored at the next start.
    Path dataDir = service.dataDir();
    String database = service.databaseUrl();
    service.close();
    io.vertx.sqlclient.Pool pool = io.vertx.pgclient.PgBuilder.pool()
        .connectingTo(io.vertx.pgclient.PgConnectOptions.fromUri(database)).using(vertx).build();
    try {
      pool.query("DELETE FROM baselines WHERE source LIKE 'job %'").execute().toCompletionStage().toCompletableFuture()
          .get();
    } finally {
      pool.close();
    }
    service = TestService.start(vertx, env, database, dataDir);
    try {
      now = current(service, user, "leaky-relu");
      assertEquals("job " + leaky, now.get("eager").getString("source"), now.toString());
      assertEquals("job " + leaky, now.get("torch_compile").getString("source"), now.toString());
    } finally {
      service.close();
    }
  }
}
