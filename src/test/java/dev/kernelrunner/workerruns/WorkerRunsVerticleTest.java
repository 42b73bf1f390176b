package dev.kernelrunner.workerruns;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.kernelrunner.bus.Addresses;
import dev.kernelrunner.bus.LocalCodec;
import dev.kernelrunner.config.AppConfig;
import dev.kernelrunner.config.ConfigLoader;
import dev.kernelrunner.dstack.DstackApi;
import dev.kernelrunner.model.Queues;
import dev.kernelrunner.support.FakeDstack;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The worker-run planner deployed alone in a fresh Vert.x ({@code DSTACK_WORKER_MODE=persistent}), its dstack the
 * fake server, whose containers really run the worker command (here a script that prints its arguments and
 * sleeps), and its bus neighbours stubbed: the tracker's queue ({@code tracker.queues}), the worker hub's list
 * ({@code workers.list}), the fleet manager ({@code fleet.ensure}) and the store's tokens
 * ({@code store.token.create}, {@code store.token.revoke}). Driven by its ticks (every 0.5 s): queued work with no
 * run starts runs up to AMD_FLEET_MAX_NODES, each with a fresh worker token in its environment and the worker's
 * arguments; a run idle past AMD_FLEET_IDLE_DURATION while nothing waits, or whose worker never connects, is
 * stopped on dstack and its token revoked; a run that died is forgotten, its token revoked and a new one started;
 * runs found on dstack are adopted and other runs left alone; a dstack failure on a tick, or a start that fails at
 * any step, leaves no run or live token behind and later ticks go on.
 */
class WorkerRunsVerticleTest {
  private static final long WAIT_SECONDS = 15;
  private static final String PUBLIC_URL = "http://127.0.0.1:9";
  private static final String WORKER_RUN = "kr-w-[a-z0-9]{8}";

  @TempDir
  Path temp;

  private Vertx vertx;
  private DstackApi api;
  private final List<FakeDstack> fakes = new ArrayList<>();

  /** What the tracker says waits for MI300X. */
  private final AtomicInteger queued = new AtomicInteger();
  /** How often the tracker was asked: once per tick that ran. */
  private final AtomicInteger queueAsks = new AtomicInteger();
  /** The worker hub's {@code workers} by run name (its token's user). */
  private final Map<String, JsonObject> workers = new ConcurrentHashMap<>();
  private final List<JsonObject> ensures = new CopyOnWriteArrayList<>();
  private final AtomicBoolean ensureFails = new AtomicBoolean();
  private final List<JsonObject> tokenCreates = new CopyOnWriteArrayList<>();
  /** The token the store made for each user. */
  private final Map<String, String> tokens = new ConcurrentHashMap<>();
  private final List<JsonObject> revokes = new CopyOnWriteArrayList<>();

  @BeforeEach
  void stubs() {
    vertx = Vertx.vertx();
    LocalCodec.register(vertx.eventBus(), Queues.class, Queues.Asked.class);
    vertx.eventBus().<Queues.Asked>consumer(Addresses.TRACKER_QUEUES, message -> {
      queueAsks.incrementAndGet();
      message.reply(new Queues(Map.of("MI300X", new Queues.Queue("worker", workers.size(), 0, queued.get()))));
    });
    vertx.eventBus().<JsonObject>consumer(Addresses.WORKERS_LIST, message ->
        message.reply(new JsonObject().put("workers", new JsonArray(new ArrayList<>(workers.values())))));
    vertx.eventBus().<JsonObject>consumer(Addresses.FLEET_ENSURE, message -> {
      ensures.add(message.body());
      if (ensureFails.get()) {
        message.fail(503, "dstack fleet: test says no");
      } else {
        message.reply(new JsonObject().put("name", "amd-mi300x-fleet").put("ready", true));
      }
    });
    vertx.eventBus().<JsonObject>consumer(Addresses.STORE_TOKEN_CREATE, message -> {
      String token = "token-" + (tokenCreates.size() + 1);
      tokens.put(message.body().getString("user_id"), token);
      tokenCreates.add(message.body());
      message.reply(new JsonObject().put("token", token).put("id", "id-" + token));
    });
    vertx.eventBus().<JsonObject>consumer(Addresses.STORE_TOKEN_REVOKE, message -> {
      revokes.add(message.body());
      message.reply(new JsonObject().put("revoked", 1));
    });
  }

  @AfterEach
  void close() throws Exception {
    if (api != null) {
      api.close();
    }
    vertx.close().toCompletionStage().toCompletableFuture().get(30, TimeUnit.SECONDS);
    fakes.forEach(FakeDstack::close);
  }

  // ---- set-up

  /** A fake dstack server whose fleet exists (the fleet manager, stubbed here, would have made it). */
  private FakeDstack fake(JsonObject knobs) throws Exception {
    FakeDstack fake = FakeDstack.start(knobs);
    fakes.add(fake);
    JsonObject spec = new JsonObject().put("profile", new JsonObject().put("name", "default"))
        .put("configuration", new JsonObject().put("type", "fleet").put("name", "amd-mi300x-fleet")
            .put("nodes", new JsonObject().put("min", 0).put("target", 0).put("max", 2)));
    assertEquals(200, fake.api("/api/project/main/fleets/apply", new JsonObject().put("plan",
        new JsonObject().put("spec", spec).putNull("current_resource")).put("force", false)).statusCode());
    return fake;
  }

  /**
   * Deploys the verticle against {@code fake}: persistent worker runs, at most 2 (AMD_FLEET_MAX_NODES), idle for
   * 1 s before they stop, the worker a script of the agent folder that prints its arguments and sleeps.
   */
  private void deploy(FakeDstack fake, Map<String, String> extra) throws Exception {
    Path agent = Files.createDirectories(temp.resolve("agent"));
    Files.writeString(agent.resolve("worker.sh"), "echo \"worker $*\"\necho \"token $KERNEL_RUNNER_WORKER_TOKEN\"\n"
        + "exec sleep 60\n");
    Map<String, String> env = new HashMap<>(fake.serviceEnv());
    env.putAll(Map.of("DATA_DIR", temp.resolve("data").toString(), "HOME", temp.toString(),
        "DSTACK_WORKER_MODE", "persistent", "PUBLIC_URL", PUBLIC_URL, "DSTACK_AGENT_DIR", agent.toString(),
        "DSTACK_WORKER_COMMAND", "sh worker.sh", "AMD_FLEET_IDLE_DURATION", "1s"));
    env.putAll(extra);
    AppConfig config = ConfigLoader.load(env);
    api = DstackApi.ifConfigured(vertx, config.dstack(), new SimpleMeterRegistry());
    vertx.deployVerticle(new WorkerRunsVerticle(config, api))
        .toCompletionStage().toCompletableFuture().get(30, TimeUnit.SECONDS);
  }

  // ---- the stubs

  /** Run {@code name}'s worker is connected, busy with a job or idle. */
  private void connected(String name, boolean busy) {
    JsonObject worker = new JsonObject().put("id", "worker-" + name).put("token_user", name)
        .put("host", name).put("gpu_type", "MI300X").put("connected", true);
    if (busy) {
      worker.put("current_job", new JsonObject().put("job_id", "job-1").put("submission_id", "s1"));
    }
    workers.put(name, worker);
  }

  private List<String> created() {
    return tokenCreates.stream().map(body -> body.getString("user_id")).toList();
  }

  private List<String> revoked() {
    return revokes.stream().map(body -> body.getString("user_id")).toList();
  }

  /** Waits until {@code count} more ticks have run to their end (the next one asks the tracker again). */
  private void awaitTicks(int count) throws Exception {
    int seen = queueAsks.get();
    awaitTrue(count + " more ticks", () -> queueAsks.get() >= seen + count + 1);
  }

  private static void awaitTrue(String what, Callable<Boolean> done) throws Exception {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(WAIT_SECONDS);
    while (!done.call()) {
      if (System.nanoTime() > deadline) {
        throw new AssertionError("not within " + WAIT_SECONDS + " s: " + what);
      }
      Thread.sleep(50);
    }
  }

  // ---- the fake server

  private static JsonArray everRuns(FakeDstack fake) throws Exception {
    return fake.state().getJsonArray("ever_runs");
  }

  private static JsonObject run(FakeDstack fake, String name) throws Exception {
    return fake.runs().getJsonObject(name);
  }

  private static String status(FakeDstack fake, String name) throws Exception {
    return run(fake, name).getString("status");
  }

  private static boolean stopping(FakeDstack fake, String name) throws Exception {
    return List.of("terminating", "terminated").contains(status(fake, name));
  }

  /** A run made on dstack by someone else than the verticle (its command sleeps). */
  private static void applyRun(FakeDstack fake, String name) throws Exception {
    JsonObject spec = new JsonObject().put("run_name", name).put("configuration", new JsonObject()
        .put("type", "task").put("commands", new JsonArray().add("sleep 60")));
    assertEquals(200, fake.api("/api/project/main/runs/apply", new JsonObject().put("plan",
        new JsonObject().put("run_spec", spec).putNull("current_resource")).put("force", false)).statusCode());
  }

  private static void abort(FakeDstack fake, String name) throws Exception {
    assertEquals(200, fake.api("/api/project/main/runs/stop", new JsonObject()
        .put("runs_names", new JsonArray().add(name)).put("abort", true)).statusCode());
  }

  // ---- starting

  @Test
  void queuedWorkStartsRunsUpToTheLimitEachWithAFreshTokenItAskedTheStoreFor() throws Exception {
    FakeDstack fake = fake(new JsonObject());
    queued.set(3);
    deploy(fake, Map.of());
    awaitTrue("two runs on dstack", () -> everRuns(fake).size() == 2);
    List<String> names = created();
    assertEquals(2, names.size(), "one token per run: " + tokenCreates);
    assertNotEquals(names.get(0), names.get(1), "each run has a name, and a token, of its own");
    for (JsonObject asked : tokenCreates) {
      assertTrue(asked.getString("user_id").matches(WORKER_RUN), "the token's user is the run's name: " + asked);
      assertEquals("worker", asked.getString("role"));
      assertEquals("worker-runs", asked.getString("created_by"));
    }
    assertEquals(2, ensures.size(), "the fleet is ensured before each run");
    ensures.forEach(body -> assertEquals("MI300X", body.getString("gpu_type")));
    assertEquals(names.stream().sorted().toList(), everRuns(fake).stream().map(String.class::cast).sorted().toList(),
        "the runs on dstack are the ones the tokens were made for");

    for (String name : names) {
      JsonObject spec = run(fake, name).getJsonObject("run_spec");
      JsonObject conf = spec.getJsonObject("configuration");
      // Issue 29: the spec, readable by every member of the project, holds a reference to a project secret; the
      // container gets the token itself (dstack fills it in when the job reaches its runner).
      assertEquals("${{ secrets." + WorkerRunsVerticle.secretName(name) + " }}",
          conf.getJsonObject("env").getString("KERNEL_RUNNER_WORKER_TOKEN"), "the run's spec: " + conf);
      assertFalse(spec.encode().contains(tokens.get(name)), "the token is nowhere in the spec");
      assertTrue(fake.state().getJsonArray("secrets").contains(WorkerRunsVerticle.secretName(name)));
      assertEquals("1", conf.getJsonObject("env").getString("PYTHONUNBUFFERED"), "the template's env is kept");
      assertEquals(new JsonArray().add("cd remote-agent").add("exec sh worker.sh --server " + PUBLIC_URL
          + " --gpu-type MI300X --host " + name), conf.getJsonArray("commands"));
      assertFalse(conf.containsKey("max_duration"), "a worker lives until it is stopped: " + conf);
      assertEquals(new JsonArray().add("amd-mi300x-fleet"), conf.getJsonArray("fleets"));
      assertEquals("MI300X:192GB:1", conf.getJsonObject("resources").getString("gpu"));
      assertEquals(1, spec.getJsonArray("file_archives").size());
      assertEquals("remote-agent", spec.getJsonArray("file_archives").getJsonObject(0).getString("path"));
    }
    String first = names.get(0);
    awaitTrue("the worker runs with its arguments", () -> run(fake, first).getString("log")
        .contains("worker --server " + PUBLIC_URL + " --gpu-type MI300X --host " + first));
    awaitTrue("the worker has its token", () -> run(fake, first).getString("log")
        .contains("token " + tokens.get(first)));

    awaitTicks(3); // work still waits, no worker has connected: the two runs on their way will take it
    assertEquals(2, everRuns(fake).size(), "never more than AMD_FLEET_MAX_NODES runs");
    assertEquals(2, tokenCreates.size());
    assertEquals(List.of(), revokes, "nothing to revoke");
    assertEquals(0, fake.calls("runs/stop"), "nothing stopped");
  }

  // ---- stopping and forgetting

  @Test
  void anIdleRunIsStoppedAndItsTokenRevokedOnlyOnceNothingWaitsAndItsIdleTimeIsUp() throws Exception {
    FakeDstack fake = fake(new JsonObject());
    queued.set(1);
    deploy(fake, Map.of());
    awaitTrue("a run is started", () -> tokenCreates.size() == 1 && everRuns(fake).size() == 1);
    String name = created().get(0);

    connected(name, true); // its worker took the job
    queued.set(0);
    awaitTicks(3);
    connected(name, false); // and finished it; idle while work waits: kept
    queued.set(1);
    awaitTicks(3);
    assertEquals(List.of(), revokes, "a busy run, or an idle one while work waits, is kept");
    assertEquals(0, fake.calls("runs/stop"));

    queued.set(0);
    awaitTrue("the idle run's token is revoked", () -> revoked().contains(name));
    assertEquals(new JsonObject().put("user_id", name).put("role", "worker"), revokes.get(0),
        "every worker token of that run's user");
    assertTrue(fake.calls("runs/stop") >= 1, "the run was stopped on dstack");
    awaitTrue("dstack stops the run", () -> stopping(fake, name));
    awaitTrue("its token's secret is deleted", () -> !fake.state().getJsonArray("secrets")
        .contains(WorkerRunsVerticle.secretName(name)));
    assertEquals(1, tokenCreates.size(), "no new run while nothing waits");
  }

  /**
   * Issue 29: where the service's dstack user may not manage project secrets, persistent worker runs refuse to start
   * (the token would be in a spec every member can read) unless the operator accepted it.
   */
  @Test
  void withoutTheRightToManageSecretsPersistentWorkersRefuseToStartUnlessAccepted() throws Exception {
    FakeDstack fake = fake(new JsonObject().put("secrets_forbidden", true));
    Exception refused = assertThrows(Exception.class, () -> deploy(fake, Map.of()));
    assertTrue(String.valueOf(refused.getMessage() + refused.getCause()).contains("DSTACK_WORKER_TOKEN_IN_SPEC"),
        "the refusal says how to go on: " + refused);

    queued.set(1);
    deploy(fake, Map.of("DSTACK_WORKER_TOKEN_IN_SPEC", "true"));
    awaitTrue("a run is started", () -> tokenCreates.size() == 1 && everRuns(fake).size() == 1);
    String name = created().get(0);
    assertEquals(tokens.get(name), run(fake, name).getJsonObject("run_spec").getJsonObject("configuration")
        .getJsonObject("env").getString("KERNEL_RUNNER_WORKER_TOKEN"), "accepted: the token is in the spec");
  }

  @Test
  void aRunThatDiesIsForgottenItsTokenRevokedAndANewOneStartedForTheWaitingWork() throws Exception {
    FakeDstack fake = fake(new JsonObject());
    queued.set(1);
    deploy(fake, Map.of());
    awaitTrue("a run is started", () -> tokenCreates.size() == 1 && everRuns(fake).size() == 1);
    String dead = created().get(0);
    awaitTicks(2); // dstack has listed it
    assertEquals(List.of(), revokes);

    abort(fake, dead); // the machine is gone
    awaitTrue("a second run is started", () -> tokenCreates.size() == 2);
    assertTrue(revoked().contains(dead), "the dead run's token is revoked: " + revokes);
    String next = created().get(1);
    assertNotEquals(dead, next);
    awaitTrue("the new run is on dstack", () -> everRuns(fake).contains(next));
    assertEquals("terminated", status(fake, dead));
    assertFalse(revoked().contains(next), "the new run's token stays live");
    assertEquals(1, fake.calls("runs/stop"), "only the test's abort: a dead run needs no stop");
  }

  @Test
  void aRunWhoseWorkerNeverConnectsIsStoppedAfterTheProvisioningTimeoutAndReplaced() throws Exception {
    FakeDstack fake = fake(new JsonObject());
    queued.set(1);
    deploy(fake, Map.of("DSTACK_PROVISIONING_TIMEOUT_SECONDS", "2"));
    awaitTrue("a run is started", () -> tokenCreates.size() == 1);
    long started = System.nanoTime();
    String lost = created().get(0);
    awaitTrue("its token is revoked", () -> revoked().contains(lost));
    long waited = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started);
    assertTrue(waited >= 1500, "stopped after DSTACK_PROVISIONING_TIMEOUT_SECONDS (2 s), not " + waited + " ms");
    awaitTrue("dstack stops it", () -> stopping(fake, lost));
    awaitTrue("a new run is started for the waiting work", () -> tokenCreates.size() == 2);
    assertNotEquals(lost, created().get(1));
  }

  @Test
  void runsFoundOnDstackAreAdoptedAndRunsNotOfOurWorkersLeftAlone() throws Exception {
    FakeDstack fake = fake(new JsonObject());
    String adopted = "kr-w-adopt001";
    applyRun(fake, adopted); // left by the service before it restarted
    applyRun(fake, "kr-w-notaworker"); // our prefix, not a worker run's length
    applyRun(fake, "someone-else");
    queued.set(1);
    deploy(fake, Map.of());
    awaitTicks(3);
    assertEquals(List.of(), tokenCreates, "the adopted run is on its way to take the waiting work");
    assertEquals(3, everRuns(fake).size());

    connected(adopted, false);
    queued.set(0);
    awaitTrue("the adopted run, once idle, is stopped", () -> revoked().contains(adopted));
    workers.remove(adopted);
    awaitTrue("dstack stops it", () -> stopping(fake, adopted));
    awaitTicks(2);
    assertEquals(List.of(adopted), revoked().stream().distinct().toList(), "only the adopted run's token is revoked");
    assertFalse(stopping(fake, "kr-w-notaworker"), "not a worker run: left alone");
    assertFalse(stopping(fake, "someone-else"), "not ours: left alone");
    assertEquals(List.of(), tokenCreates);
  }

  @Test
  // Found by this test, fixed: a stopped run still terminating was adopted back and counted as on its way.
  void aStoppedRunStillTerminatingIsNotAdoptedBackAndNewWorkStartsANewRun() throws Exception {
    FakeDstack fake = fake(new JsonObject().put("ignore_stop", true)); // the worker takes its time to stop
    queued.set(1);
    deploy(fake, Map.of("AMD_FLEET_MAX_NODES", "1"));
    awaitTrue("a run is started", () -> tokenCreates.size() == 1);
    String first = created().get(0);
    connected(first, false);
    queued.set(0);
    awaitTrue("the idle run is stopped", () -> revoked().contains(first));
    awaitTrue("dstack is stopping it", () -> "terminating".equals(status(fake, first)));
    workers.remove(first); // its worker has let go
    awaitTicks(2);
    queued.set(1);
    awaitTrue("new work starts a new run", () -> tokenCreates.size() == 2);
    assertEquals(1, fake.calls("runs/stop"), "the stopped run is stopped once");
  }

  // ---- failures

  @Test
  void aDstackFailureOnATickStartsNothingAndLaterTicksGoOn() throws Exception {
    FakeDstack fake = fake(new JsonObject());
    fake.configure(new JsonObject().put("token", "another")); // every call refused
    queued.set(1);
    deploy(fake, Map.of());
    awaitTicks(3);
    assertEquals(List.of(), tokenCreates, "a tick that could not list the runs starts none");
    assertEquals(List.of(), ensures);
    assertEquals(0, everRuns(fake).size());
    assertTrue(fake.calls("users/get_my_user") >= 3, "each tick asked dstack again (for its user, then its runs)");

    fake.configure(new JsonObject()); // the token put right
    awaitTrue("a run is started", () -> tokenCreates.size() == 1 && everRuns(fake).size() == 1);
    assertEquals(created(), everRuns(fake).getList());
  }

  @Test
  void aStartThatFailsAtAnyStepLeavesNoRunNorLiveTokenAndIsTriedAgain() throws Exception {
    FakeDstack fake = fake(new JsonObject());
    Path template = temp.resolve("task.json");
    Files.writeString(template, new JsonObject().put("type", "task").put("image", "rocm/pytorch:test")
        .put("bogus", true).encode()); // a field dstack refuses (422)
    ensureFails.set(true);
    queued.set(1);
    deploy(fake, Map.of("DSTACK_TASK_TEMPLATE", template.toString()));
    awaitTrue("the fleet is asked on later ticks too", () -> ensures.size() >= 2);
    assertEquals(List.of(), tokenCreates, "no token without a fleet");
    assertEquals(0, fake.calls("runs/apply"));

    ensureFails.set(false);
    awaitTrue("two runs refused by dstack", () -> fake.calls("runs/apply") >= 2 && tokenCreates.size() >= 2
        && revoked().containsAll(created()));
    List<String> tried = created();
    assertNotEquals(tried.get(0), tried.get(1), "each attempt is a new run with a new token");
    assertTrue(revoked().containsAll(tried), "every token made for a refused run is revoked: " + revokes);
    assertEquals(0, everRuns(fake).size(), "dstack runs none of them");
    assertTrue(fake.calls("runs/stop") >= 2, "each refused run is stopped in case it went through");
  }
}
