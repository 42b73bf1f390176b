package dev.kernelrunner.flow;

import static dev.kernelrunner.flow.WorkerFlowTest.signed;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.kernelrunner.backend.AgentOutput;
import dev.kernelrunner.flow.WorkerFlowTest.ScriptedWorker;
import dev.kernelrunner.support.Ports;
import dev.kernelrunner.support.PullWorkers;
import dev.kernelrunner.support.SseClient;
import dev.kernelrunner.support.SseClient.Frame;
import dev.kernelrunner.support.TestService;
import dev.kernelrunner.support.TestService.Response;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.junit5.VertxExtension;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Issue 28: a GPU machine gets exactly the work it was given, and a worker token nothing more. Against the whole
 * service, with the real worker and hand-written ones that speak the protocol: a worker that forges a "verified"
 * result from everything its job gave it does not rank unless its pool is trusted; a token serves only its pool's
 * GPU types and never this host's own; after a restart only the token a job was given to may take it back; a
 * crash-looping machine waits behind a healthy one and a lost job goes elsewhere; a machine that loses three jobs in
 * a row gets only a check job until it passes one; a revoked token's stream closes.
 */
@ExtendWith(VertxExtension.class)
class WorkerTrustTest {
  private static final Duration WAIT = Duration.ofSeconds(60);
  private static final String GPU = "H100";
  private static final String BOARD = "/api/leaderboards/leaky-relu?gpu_type=" + GPU;

  private Vertx vertx;
  private TestService service;
  private int port;
  private final List<Process> workers = new ArrayList<>();

  @BeforeEach
  void start(Vertx vertx) throws Exception {
    this.vertx = vertx;
    port = Ports.free();
    service = TestService.start(vertx, env(Map.of()));
  }

  private Map<String, String> env(Map<String, String> more) {
    Map<String, String> env = new HashMap<>(Map.of("WORKER_GPU_TYPES", GPU + ",A100", "WORKER_LOST_SECONDS", "2",
        "HTTP_PORT", String.valueOf(port), "MAX_ACTIVE_PER_USER", "20", "LOCAL_GPU_TYPES", "local",
        "LOCAL_WORKERS", "false"));
    env.putAll(more);
    return env;
  }

  @AfterEach
  void stop() throws Exception {
    for (Process worker : workers) {
      PullWorkers.killTree(worker);
    }
    if (service != null) {
      service.close();
    }
  }

  @Test
  void aWorkerThatForgesAVerifiedResultFromWhatItWasGivenDoesNotRankUnlessItsPoolIsTrusted() throws Exception {
    // A real result, by the real worker of a trusted pool: it ranks.
    Process honest = PullWorkers.start(service, port, token("team-box", "team", true, null), GPU, "team-host", true);
    workers.add(honest);
    String ann = service.userToken("ann");
    String real = submit(ann, "// agent: ok\n// runtime: 0.5\n// timing: verified");
    List<Frame> genuine = follow(real, ann);
    assertEquals(Set.of("ann"), ranked(), "a trusted pool's result ranks");
    JsonObject runner = service.submission(real).getJsonObject("result").getJsonObject("runner");
    assertEquals("team", runner.getString("pool"));
    assertTrue(runner.getBoolean("trusted"));
    PullWorkers.killTree(honest);
    workers.remove(honest);

    // A hand-written worker of the default pool (not trusted) signs that whole run again with its own job's key,
    // claiming it is trusted, 30 times faster: published, but ranked:false with the reason, and off the board.
    String mal = service.userToken("mal");
    String forgedId = forge(token("byo-box", null, null, null), mal, genuine, "byo");
    JsonObject forged = service.submission(forgedId).getJsonObject("result");
    assertEquals("BENCHMARKED", service.submission(forgedId).getString("status"));
    assertFalse(forged.getBoolean("ranked"), forged.encode());
    assertTrue(forged.getString("unranked_reason").contains("'default'"), forged.encode());
    assertEquals("default", forged.getJsonObject("runner").getString("pool"), "the hub's stamp, not the lines'");
    assertFalse(forged.getJsonObject("runner").getBoolean("trusted"));
    assertEquals(Set.of("ann"), ranked(), "the forgery is not on the board");

    // The same forgery by a worker of a trusted pool ranks: what stops it is the trust, nothing else.
    String tru = service.userToken("tru");
    forge(token("trusted-box", "team", true, null), tru, genuine, "trusted");
    assertEquals(Set.of("ann", "tru"), ranked(), "trust is what a ranked worker result rests on");
  }

  @Test
  void aTokenServesItsPoolsTypesOnlyAndNeverThisHostsOwn() throws Exception {
    String a100Only = token("a100-box", "a100s", false, new JsonArray().add("A100"));
    try (ScriptedWorker wrong = ScriptedWorker.open(port, a100Only, "w1", GPU, null)) {
      assertEquals(403, wrong.status, wrong.error);
      JsonObject error = new JsonObject(wrong.error);
      assertEquals(GPU, error.getString("gpu_type"));
      assertEquals("a100s", error.getString("pool"));
    }
    try (ScriptedWorker right = ScriptedWorker.open(port, a100Only, "w2", "A100", null)) {
      assertEquals(200, right.status, right.error);
    }
    // This host's own type: no token made over the API may serve it, whatever its pool says.
    String any = token("any-box", null, true, null);
    try (ScriptedWorker local = ScriptedWorker.open(port, any, "w3", "local", null)) {
      assertEquals(403, local.status, local.error);
      assertEquals("local", new JsonObject(local.error).getString("gpu_type"));
    }
    for (JsonObject bad : List.of(new JsonObject().put("gpu_types", new JsonArray().add("local")),
        new JsonObject().put("gpu_types", new JsonArray().add("MI300X")), new JsonObject().put("pool", "local"),
        new JsonObject().put("pool", "dstack-workers"), new JsonObject().put("trusted", "yes"))) {
      Response refused = service.post("/api/admin/tokens", TestService.ADMIN_TOKEN,
          bad.copy().put("role", "worker").put("user_id", "x").encode());
      assertEquals(400, refused.status(), bad + " -> " + refused.body());
      assertEquals(bad.fieldNames().iterator().next(), refused.json().getJsonArray("details").getJsonObject(0)
          .getString("field"), refused.body());
    }
    Response userPool = service.post("/api/admin/tokens", TestService.ADMIN_TOKEN,
        new JsonObject().put("role", "user").put("user_id", "u").put("pool", "p").encode());
    assertEquals(400, userPool.status(), "only a worker token has a pool: " + userPool.body());
  }

  @Test
  void afterARestartOnlyTheTokenAJobWasGivenToMayTakeItBack() throws Exception {
    // Its worker away for longer than the restart takes: with the class's 2 s, a slow stop (a loaded CI machine)
    // let the job count as lost and be re-queued before the restart, and the thief found nothing held.
    service.close();
    service = TestService.start(vertx, env(Map.of("WORKER_LOST_SECONDS", "30")));
    String holderToken = token("holder-box", "team", true, null);
    String otherToken = token("other-box", "team", true, null);
    String holderMachine = enroll(holderToken);
    String otherMachine = enroll(otherToken);
    String user = service.userToken("uma");
    ScriptedWorker holder = ScriptedWorker.open(port, holderToken, "holder", GPU, null, "test", "0", holderMachine);
    String id = submit(user, "// agent: ok");
    JsonObject job = holder.next("job");
    String jobId = job.getString("job_id");
    AgentOutput.EventKey key = AgentOutput.EventKey.of(job.getJsonObject("payload").getString("event_key"));
    holder.lines(jobId, 0, List.of(signed(key, "COMPILING", new JsonObject())));
    holder.close();
    // The run and its COMPILING are on record before the stop (CI stopped the service 5 ms after the job was
    // given, its PROVISIONING not yet stored): else the restart finds it still queued, queues it anew, and nothing
    // is held for the thief to be refused.
    long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
    JsonObject stored = service.get("/api/submissions/" + id, user).json();
    while ((stored.getValue("run_name") == null || !"COMPILING".equals(stored.getString("status")))
        && System.nanoTime() < deadline) {
      Thread.sleep(50);
      stored = service.get("/api/submissions/" + id, user).json();
    }
    assertEquals("COMPILING", stored.getString("status"), stored.encode());
    Path dataDir = service.dataDir();
    String database = service.databaseUrl();
    service.close();
    service = TestService.start(vertx, env(Map.of("WORKER_LOST_SECONDS", "30")), database, dataDir);

    try (ScriptedWorker thief = ScriptedWorker.open(port, otherToken, "thief", GPU, jobId, "t", "0", otherMachine)) {
      assertEquals(403, thief.status, "another token naming the job: " + thief.error);
      assertTrue(thief.error.contains(jobId), thief.error);
    }
    try (ScriptedWorker back = ScriptedWorker.open(port, holderToken, "holder", GPU, jobId, "test", "0",
        holderMachine)) {
      assertEquals(200, back.status, back.error);
      // From the start, as the real worker does: the service takes what it does not have yet.
      back.lines(jobId, 0, List.of(signed(key, "COMPILING", new JsonObject()),
          signed(key, "COMPILE_ERROR", new JsonObject().put("message", "mine"))));
      assertTrue(back.exit(jobId, 2, 1).getBoolean("ended"));
    }
    List<Frame> frames = follow(id, user);
    assertEquals("COMPILE_ERROR", frames.get(frames.size() - 1).event(), frames.toString());
    assertEquals("mine", frames.get(frames.size() - 1).data().getString("message"));
  }

  @Test
  void aCrashLoopingMachineWaitsBehindAHealthyOneAndALostJobGoesElsewhere() throws Exception {
    String flaky = token("flaky-box", "team", true, null);
    String steady = token("steady-box", "team", true, null);
    String flakyKey = enroll(flaky);
    String steadyKey = enroll(steady);
    String user = service.userToken("cal");
    // The steady machine has done a job already; the flaky one's worker restarts under a new id (0 jobs done).
    try (ScriptedWorker healthy = ScriptedWorker.open(port, steady, "steady-1", GPU, null, "steady", "0", steadyKey)) {
      finish(healthy, submit(user, "// agent: ok"), user);
      ScriptedWorker.open(port, flaky, "flaky-1", GPU, null, "flaky", "0", flakyKey).close();
      awaitWorkers(1);
      try (ScriptedWorker again = ScriptedWorker.open(port, flaky, "flaky-2", GPU, null, "flaky", "0", flakyKey)) {
        awaitWorkers(2);
        JsonObject flakyNow = worker("flaky-2");
        assertTrue(flakyNow.getJsonObject("health").getBoolean("restarted_recently"), flakyNow.encode());
        assertEquals("team", flakyNow.getString("pool"));
        // The healthy machine gets it though the other has done fewer jobs.
        finish(healthy, submit(user, "// agent: ok"), user);
        assertNull(again.poll("job", Duration.ofMillis(300)), "nothing for the crash-looping one");
      }
    }
    // A job lost on a machine goes to another when one is free.
    try (ScriptedWorker a = ScriptedWorker.open(port, steady, "a-1", GPU, null, "a", "0", steadyKey)) {
      String id = submit(user, "// agent: ok");
      assertEquals(id, a.next("job").getString("submission_id"));
      a.close(); // gone: lost after 2 s, re-queued
      try (ScriptedWorker b = ScriptedWorker.open(port, flaky, "b-1", GPU, null, "b", "0", flakyKey);
           ScriptedWorker aBack = ScriptedWorker.open(port, steady, "a-2", GPU, null, "a", "0", steadyKey)) {
        awaitWorkers(2);
        assertEquals(id, b.next("job").getString("submission_id"), "the re-queued job went to the other machine");
        assertNull(aBack.poll("job", Duration.ofMillis(300)));
      }
    }
  }

  @Test
  void aMachineThatLosesThreeJobsInARowGetsOnlyACheckJobUntilItPassesOne() throws Exception {
    String box = token("lossy-box", "team", true, null);
    String key = enroll(box);
    String user = service.userToken("lou");
    // A worker that comes back without its job has lost it: the first job twice (re-queued once, then an ERROR),
    // the second once. Three in a row.
    String first = submit(user, "// agent: ok");
    String second = submit(user, "// agent: ok");
    ScriptedWorker worker = ScriptedWorker.open(port, box, "lossy", GPU, null, "lossy", "0", key);
    for (String id : List.of(first, first, second)) {
      assertEquals(id, worker.next("job").getString("submission_id"));
      worker.close();
      worker = ScriptedWorker.open(port, box, "lossy", GPU, null, "lossy", "0", key);
    }
    try (ScriptedWorker back = worker) {
      JsonObject check = back.next("job");
      assertTrue(check.getBoolean("check"), "a check job: " + check.encode());
      JsonObject payload = check.getJsonObject("payload");
      assertEquals("check", payload.getString("mode"));
      JsonObject health = worker("lossy").getJsonObject("health");
      assertTrue(health.getBoolean("quarantined"), health.encode());
      String waiting = submit(user, "// agent: ok");
      assertNull(back.poll("job", Duration.ofMillis(300)), "no user job while it is quarantined");
      AgentOutput.EventKey jobKey = AgentOutput.EventKey.of(payload.getString("event_key"));
      String jobId = check.getString("job_id");
      back.lines(jobId, 0, List.of(signed(jobKey, "COMPILING", new JsonObject()),
          signed(jobKey, "CHECKED", new JsonObject())));
      assertTrue(back.exit(jobId, 2, 0).getBoolean("ended"));
      assertEquals(second, back.next("job").getString("submission_id"), "passed: back in service, its lost job first");
      health = worker("lossy").getJsonObject("health");
      assertFalse(health.getBoolean("quarantined"), health.encode());
      assertTrue(health.getJsonObject("check").getBoolean("passed"), health.encode());
      assertEquals("IN_QUEUE", service.submission(waiting).getString("status"), "the next waits for a free worker");
    }
    assertEquals("ERROR", service.submission(first).getString("status"), "lost twice: an error, not a third try");
  }

  @Test
  void aTrustedTokenServesOnlyOnTheMachineItIsBoundTo() throws Exception {
    Response created = service.post("/api/admin/tokens", TestService.ADMIN_TOKEN, new JsonObject()
        .put("role", "worker").put("user_id", "box").put("pool", "team").put("trusted", true).encode());
    String token = created.json().getString("token");
    String tokenId = created.json().getString("id");
    try (ScriptedWorker early = ScriptedWorker.open(port, token, "w", GPU, null)) {
      assertEquals(403, early.status, "no job before a machine enrolls: " + early.error);
      assertEquals("not_enrolled", new JsonObject(early.error).getString("error"));
    }
    String mine = newKey();
    Response enrolled = enroll(token, mine);
    assertEquals(200, enrolled.status(), enrolled.body());
    String fingerprint = enrolled.json().getString("fingerprint");
    assertEquals(200, enroll(token, mine).status(), "enrolling again with the same key is harmless");
    try (ScriptedWorker worker = ScriptedWorker.open(port, token, "w", GPU, null, "box", "0", mine)) {
      assertEquals(200, worker.status, worker.error);
    }
    // A copy of the token on another machine: it cannot enroll its own key, nor open a stream without the proof.
    String theirs = newKey();
    Response stolen = enroll(token, theirs);
    assertEquals(409, stolen.status(), stolen.body());
    for (String proof : new String[] {theirs, null}) {
      try (ScriptedWorker thief = ScriptedWorker.open(port, token, "w", GPU, null, "elsewhere", "0", proof)) {
        assertEquals(401, thief.status, thief.error);
        assertTrue(thief.error.contains(fingerprint), thief.error);
      }
    }
    JsonObject listed = service.get("/api/admin/tokens", TestService.ADMIN_TOKEN).json().getJsonArray("tokens")
        .stream().map(t -> (JsonObject) t).filter(t -> tokenId.equals(t.getString("id"))).findFirst().orElseThrow();
    assertEquals(fingerprint, listed.getJsonObject("machine").getString("fingerprint"), listed.encode());
    assertFalse(listed.encode().contains(mine), "the key itself is never shown");
    // The machine was replaced: an admin frees the token, and the next machine to enroll has it.
    assertEquals(200, service.delete("/api/admin/tokens/" + tokenId + "/machine", TestService.ADMIN_TOKEN).status());
    assertEquals(200, enroll(token, theirs).status());
    try (ScriptedWorker old = ScriptedWorker.open(port, token, "w", GPU, null, "box", "0", mine)) {
      assertEquals(401, old.status, old.error);
    }
    try (ScriptedWorker replaced = ScriptedWorker.open(port, token, "w2", GPU, null, "new-box", "0", theirs)) {
      assertEquals(200, replaced.status, replaced.error);
    }
  }

  @Test
  void aRevokedTokensStreamClosesAndItsJobIsRequeuedOnceItsWorkerCountsAsLost() throws Exception {
    Response created = service.post("/api/admin/tokens", TestService.ADMIN_TOKEN,
        new JsonObject().put("role", "worker").put("user_id", "stolen").encode());
    String stolen = created.json().getString("token");
    String tokenId = created.json().getString("id");
    String user = service.userToken("rob");
    try (ScriptedWorker worker = ScriptedWorker.open(port, stolen, "s-1", GPU, null)) {
      String id = submit(user, "// agent: ok");
      assertEquals(id, worker.next("job").getString("submission_id"));
      assertEquals(204, service.delete("/api/admin/tokens/" + tokenId, TestService.ADMIN_TOKEN).status());
      assertNotNull(worker.poll("revoked", WAIT), "the worker is told, and its stream closes");
      awaitWorkers(0);
      long deadline = System.nanoTime() + WAIT.toNanos();
      while (service.submission(id).getInteger("restart_count", 0) < 1) {
        assertTrue(System.nanoTime() < deadline, "the job was not re-queued");
        Thread.sleep(20);
      }
    }
    try (ScriptedWorker again = ScriptedWorker.open(port, stolen, "s-2", GPU, null)) {
      assertEquals(401, again.status, again.error);
    }
  }

  // ---- helpers

  /** A worker of {@code host}'s GPU 0 that signs {@code run}'s events again as its job's, 30 times faster. */
  private String forge(String workerToken, String userToken, List<Frame> run, String host) throws Exception {
    String machine = enroll(workerToken);
    try (ScriptedWorker forger = ScriptedWorker.open(port, workerToken, host + "-forger", GPU, null, host, "0",
        machine)) {
      assertEquals(200, forger.status, forger.error);
      String id = submit(userToken, "// anything: the worker decides what it reports");
      JsonObject job = forger.next("job");
      String jobId = job.getString("job_id");
      AgentOutput.EventKey key = AgentOutput.EventKey.of(job.getJsonObject("payload").getString("event_key"));
      List<String> lines = new ArrayList<>();
      for (Frame frame : run) {
        if (frame.event().equals("IN_QUEUE") || frame.event().equals("PROVISIONING")) {
          continue;
        }
        JsonObject fields = frame.data().copy();
        if (frame.event().equals("BENCHMARKED")) {
          fields.put("geomean_runtime_ms", fields.getDouble("geomean_runtime_ms") / 30)
              .put("runner", new JsonObject().put("pool", "team").put("trusted", true)).put("ranked", true);
        }
        lines.add(signed(key, frame.event(), fields));
      }
      forger.lines(jobId, 0, lines);
      assertTrue(forger.exit(jobId, lines.size(), 0).getBoolean("ended"));
      service.awaitFinished(id, WAIT);
      follow(id, userToken);
      return id;
    }
  }

  /** Plays a whole honest run of the job of {@code id} on {@code worker}. */
  private void finish(ScriptedWorker worker, String id, String user) throws Exception {
    JsonObject job = worker.next("job");
    assertEquals(id, job.getString("submission_id"));
    AgentOutput.EventKey key = AgentOutput.EventKey.of(job.getJsonObject("payload").getString("event_key"));
    String jobId = job.getString("job_id");
    worker.lines(jobId, 0, List.of(signed(key, "COMPILING", new JsonObject()),
        signed(key, "COMPILE_ERROR", new JsonObject().put("message", "done"))));
    assertTrue(worker.exit(jobId, 2, 1).getBoolean("ended"));
    follow(id, user);
  }

  /** Enrolls a new machine key with {@code workerToken}; returns the key (base64). */
  private String enroll(String workerToken) throws Exception {
    String key = newKey();
    Response enrolled = enroll(workerToken, key);
    assertEquals(200, enrolled.status(), enrolled.body());
    return key;
  }

  private Response enroll(String workerToken, String key) throws Exception {
    return service.post("/api/worker/enroll", workerToken, new JsonObject().put("machine_key", key).encode());
  }

  private static String newKey() {
    byte[] key = new byte[32];
    new java.security.SecureRandom().nextBytes(key);
    return java.util.Base64.getEncoder().encodeToString(key);
  }

  /** The users on the H100 board. */
  private Set<String> ranked() throws Exception {
    JsonArray entries = service.get(BOARD, TestService.ADMIN_TOKEN).json().getJsonArray("entries");
    Set<String> users = new java.util.TreeSet<>();
    entries.forEach(entry -> users.add(((JsonObject) entry).getString("user_id")));
    return users;
  }

  private JsonObject worker(String id) throws Exception {
    JsonArray listed = service.get("/api/admin/workers", TestService.ADMIN_TOKEN).json().getJsonArray("workers");
    for (Object entry : listed) {
      if (id.equals(((JsonObject) entry).getString("id"))) {
        return (JsonObject) entry;
      }
    }
    throw new AssertionError("no worker " + id + " in " + listed.encode());
  }

  private void awaitWorkers(int connected) throws Exception {
    long deadline = System.nanoTime() + WAIT.toNanos();
    while (true) {
      JsonArray listed = service.get("/api/admin/workers", TestService.ADMIN_TOKEN).json().getJsonArray("workers");
      long count = listed.stream().filter(w -> ((JsonObject) w).getBoolean("connected")).count();
      if (count == connected) {
        return;
      }
      assertTrue(System.nanoTime() < deadline, "never " + connected + " connected workers: " + listed.encode());
      Thread.sleep(20);
    }
  }

  private String token(String machine, String pool, Boolean trusted, JsonArray types) throws Exception {
    JsonObject body = new JsonObject().put("role", "worker").put("user_id", machine);
    if (pool != null) {
      body.put("pool", pool);
    }
    if (trusted != null) {
      body.put("trusted", trusted);
    }
    if (types != null) {
      body.put("gpu_types", types);
    }
    Response created = service.post("/api/admin/tokens", TestService.ADMIN_TOKEN, body.encode());
    assertEquals(201, created.status(), created.body());
    return created.json().getString("token");
  }

  private String submit(String userToken, String code) throws Exception {
    Response response = service.post("/api/submissions", userToken,
        TestService.submission(code, "benchmark").put("gpu_type", GPU).encode());
    assertEquals(201, response.status(), response.body());
    return response.json().getString("id");
  }

  private List<Frame> follow(String id, String userToken) throws Exception {
    try (SseClient events = service.events(id, userToken, Map.of())) {
      return events.untilEnd(WAIT);
    }
  }
}
