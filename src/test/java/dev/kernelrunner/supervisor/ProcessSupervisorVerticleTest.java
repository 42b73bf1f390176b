package dev.kernelrunner.supervisor;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.kernelrunner.backend.Backend;
import dev.kernelrunner.backend.RunListener;
import dev.kernelrunner.backend.RunOrder;
import dev.kernelrunner.bus.Addresses;
import dev.kernelrunner.bus.LocalCodec;
import dev.kernelrunner.config.ConfigLoader;
import dev.kernelrunner.model.EventType;
import dev.kernelrunner.model.Progress;
import dev.kernelrunner.support.TempDirs;
import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The supervisor deployed alone, its neighbours stubbed on the bus (the store's submission, the tracker's progress,
 * the registry) and a backend the test drives: a run's events reach the tracker in order, its end reaches it once
 * however the backend reports it, a kill stops the run and is answered once it is gone, a kill before the start
 * starts nothing, and the time limit kills a run that outlives it.
 */
class ProcessSupervisorVerticleTest {
  private Vertx vertx;
  private final List<Progress> progress = new CopyOnWriteArrayList<>();
  private final List<String> registered = new CopyOnWriteArrayList<>();
  private final Map<String, Promise<Driven>> started = new ConcurrentHashMap<>();
  private final AtomicInteger starts = new AtomicInteger();
  private final Map<String, JsonObject> payloads = new ConcurrentHashMap<>();
  /** The mode of every submission the stubbed store hands out. */
  private volatile String mode = "benchmark";

  /**
   * A run the test drives: what the supervisor listens with, how often it was asked to stop, and the supervisor's
   * context, where a backend calls its listener.
   */
  record Driven(RunListener listener, AtomicInteger kills, Context context) {}

  private final Backend backend = new Backend() {
    @Override
    public String name() {
      return "driven";
    }

    @Override
    public Future<Backend.RunHandle> start(JsonObject payload, RunListener listener) {
      starts.incrementAndGet();
      payloads.put(payload.getString("submission_id"), payload);
      AtomicInteger kills = new AtomicInteger();
      started.computeIfAbsent(payload.getString("submission_id"), id -> Promise.promise())
          .complete(new Driven(listener, kills, Vertx.currentContext()));
      return Future.succeededFuture(new Backend.RunHandle() {
        @Override
        public Long pid() {
          return null;
        }

        @Override
        public String node() {
          return "test";
        }

        @Override
        public String runName() {
          return "run-" + payload.getString("submission_id");
        }

        @Override
        public void kill() {
          kills.incrementAndGet();
        }
      });
    }
  };

  @BeforeEach
  void deploy() throws Exception {
    vertx = Vertx.vertx();
    LocalCodec.register(vertx.eventBus(), Progress.Event.class, Progress.Exit.class, RunOrder.Start.class,
        RunOrder.Kill.class, RunOrder.Stopped.class);
    vertx.eventBus().<JsonObject>consumer(Addresses.STORE_SUBMISSION_GET, message -> message.reply(new JsonObject()
        .put("id", message.body().getString("id")).put("problem", "leaky-relu").put("language", "cuda")
        .put("dtype", "float32").put("code", "// code").put("mode", mode).put("gpu_type", "test")));
    vertx.eventBus().<Progress>consumer(Addresses.SUBMISSIONS_PROGRESS, message -> {
      progress.add(message.body());
      message.reply(message.body() instanceof Progress.Exit ? "ENDED" : "STORED");
    });
    vertx.eventBus().<JsonObject>consumer(Addresses.REGISTRY_REGISTER, message -> {
      registered.add(message.body().getString("run_name"));
      message.reply(new JsonObject());
    });
    vertx.eventBus().<JsonObject>consumer(Addresses.REGISTRY_UNREGISTER, message -> message.reply(new JsonObject()));
    var config = ConfigLoader.load(Map.of("DATA_DIR", TempDirs.directory("kr-supervisor").toString(),
        "SUBMISSION_TIMEOUT_SECONDS", "2"));
    vertx.deployVerticle(new ProcessSupervisorVerticle(config, Map.of("driven", backend)))
        .toCompletionStage().toCompletableFuture().get(30, TimeUnit.SECONDS);
  }

  @AfterEach
  void close() throws Exception {
    vertx.close().toCompletionStage().toCompletableFuture().get(30, TimeUnit.SECONDS);
  }

  private <T> T ask(String address, Object order) throws Exception {
    return vertx.eventBus().<T>request(address, order).toCompletionStage().toCompletableFuture()
        .get(10, TimeUnit.SECONDS).body();
  }

  private boolean startAsked(String id) throws Exception {
    return ask(Addresses.SUPERVISOR_START, new RunOrder.Start(id, "test", "driven"));
  }

  private Driven start(String id) throws Exception {
    assertTrue(startAsked(id));
    return started.computeIfAbsent(id, k -> Promise.promise()).future().toCompletionStage().toCompletableFuture()
        .get(10, TimeUnit.SECONDS);
  }

  /** A step of the run, on the supervisor's context, as a backend's own callbacks come. */
  private void onContext(Driven run, Runnable step) throws Exception {
    Promise<Void> done = Promise.promise();
    run.context().runOnContext(v -> {
      step.run();
      done.complete();
    });
    done.future().toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
  }

  private List<Progress.Exit> exits(String id) {
    return progress.stream().filter(p -> p instanceof Progress.Exit e && e.submissionId().equals(id))
        .map(p -> (Progress.Exit) p).toList();
  }

  private void await(java.util.function.BooleanSupplier done) throws Exception {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (!done.getAsBoolean() && System.nanoTime() < deadline) {
      Thread.sleep(20);
    }
    assertTrue(done.getAsBoolean(), "not reached: " + progress);
  }

  @Test
  void eventsReachTheTrackerInOrderAndTheEndOnceHoweverOftenTheBackendReportsIt() throws Exception {
    Driven run = start("s1");
    onContext(run, () -> {
      run.listener().onEvent(EventType.COMPILING, new JsonObject());
      run.listener().onEvent(EventType.CHECKING, new JsonObject().put("total_tests", 2));
      run.listener().onEvent(EventType.BENCHMARKED, new JsonObject());
      run.listener().onExit(0, List.of("bye"));
      run.listener().onExit(1, List.of("again"));
      run.listener().onFailed(EventType.ERROR, new JsonObject().put("message", "late"), List.of());
    });
    await(() -> exits("s1").size() == 1);
    Thread.sleep(200);
    assertEquals(List.of(EventType.COMPILING, EventType.CHECKING, EventType.BENCHMARKED), progress.stream()
        .filter(p -> p instanceof Progress.Event).map(p -> ((Progress.Event) p).type()).toList());
    assertEquals(1, exits("s1").size(), progress.toString());
    Progress.Exit exit = exits("s1").get(0);
    assertEquals(new Progress.Exited(0), exit.outcome());
    assertEquals(List.of("bye"), exit.logTail());
    assertEquals(List.of("run-s1"), registered);
  }

  @Test
  void aBenchmarkCarriesWhereItsBoardsNumberOnesIntervalBeginsSoThatTheAgentAuditsANewNumberOne() throws Exception {
    List<JsonObject> asked = new CopyOnWriteArrayList<>();
    vertx.eventBus().<JsonObject>consumer(Addresses.STORE_LEADERBOARD, message -> {
      asked.add(message.body());
      // The board's candidates: ann's median 2.0 from samples 1-3 (fewer than 6: the interval is their range, from
      // 1.0), bob's 4.0; the second time, none.
      message.reply(new JsonObject().put("rows", asked.size() > 1 ? new JsonArray() : new JsonArray()
          .add(candidate("bob", 4.0, 3.0, 4.0, 5.0)).add(candidate("ann", 2.0, 1.0, 2.0, 3.0))));
    });
    start("s5");
    assertEquals(new JsonObject().put("problem", "leaky-relu").put("gpu_type", "test").put("dtype", "float32")
        .put("limit", 20), asked.get(0), "the board the result would rank on, its best candidates");
    JsonObject benchmark = payloads.get("s5").getJsonObject("benchmark");
    assertEquals(1.0, benchmark.getDouble("new_best_below_ms"), "below the #1's interval: beyond its noise");
    assertFalse(benchmark.containsKey("audit"), "the agent decides: a new #1, or a random share");
    start("s6");
    JsonObject empty = payloads.get("s6").getJsonObject("benchmark");
    assertTrue(empty.containsKey("new_best_below_ms") && empty.getValue("new_best_below_ms") == null,
        "an empty board: the first result is its #1 " + empty);
  }

  private static JsonObject candidate(String user, double runtime, double... samples) {
    JsonArray timed = new JsonArray();
    for (double sample : samples) {
      timed.add(sample);
    }
    return new JsonObject().put("id", user + "-id").put("user_id", user).put("created_at", "2026-11-26T00:00:00Z")
        .put("speedup", 1.0).put("tests", new JsonArray().add(new JsonObject().put("test_id", 1)
            .put("runtime_ms", runtime)))
        .put("samples", new JsonArray().add(new JsonObject().put("test_id", 1).put("samples", timed)));
  }

  @Test
  void aBenchmarkWhoseBoardCannotBeReadIsAuditedAndCheckRunsAskNothing() throws Exception {
    start("s7");
    JsonObject benchmark = payloads.get("s7").getJsonObject("benchmark");
    assertEquals(true, benchmark.getBoolean("audit"), "no store answered: audited whatever it is " + benchmark);
    assertFalse(benchmark.containsKey("new_best_below_ms"));
    mode = "check";
    start("s8");
    assertEquals(new JsonObject().put("review_speedup", payloads.get("s8").getJsonObject("benchmark")
        .getValue("review_speedup")), payloads.get("s8").getJsonObject("benchmark"), "no board for a check run");
  }

  @Test
  void aKillStopsTheRunAndIsAnsweredOnceItIsGone() throws Exception {
    Driven run = start("s2");
    var answer = vertx.eventBus().<RunOrder.Stopped>request(Addresses.SUPERVISOR_KILL, new RunOrder.Kill("s2"))
        .toCompletionStage().toCompletableFuture();
    await(() -> run.kills().get() == 1);
    assertFalse(answer.isDone(), "answered only once the run is gone");
    onContext(run, () -> run.listener().onExit(null, List.of()));
    RunOrder.Stopped gone = answer.get(10, TimeUnit.SECONDS).body();
    assertEquals(new RunOrder.Stopped("ENDED", true), gone);
    assertEquals(new Progress.Killed(), exits("s2").get(0).outcome(), "the tracker is told it was killed");
  }

  @Test
  void aKillBeforeTheStartStartsNothingAndEndsTheRunAsKilled() throws Exception {
    RunOrder.Stopped answer = ask(Addresses.SUPERVISOR_KILL, new RunOrder.Kill("s3"));
    assertEquals(new RunOrder.Stopped(null, false), answer, "nothing to stop yet");
    assertTrue(startAsked("s3"));
    await(() -> exits("s3").size() == 1);
    assertEquals(0, starts.get(), "the backend was never asked");
    assertEquals(new Progress.Killed(), exits("s3").get(0).outcome());
  }

  @Test
  void aRunPastItsTimeLimitIsKilledAndEndsTimedOut() throws Exception {
    Driven run = start("s4");
    onContext(run, () -> run.listener().onEvent(EventType.COMPILING, new JsonObject()));
    await(() -> run.kills().get() >= 1); // SUBMISSION_TIMEOUT_SECONDS=2
    onContext(run, () -> run.listener().onExit(null, List.of()));
    await(() -> exits("s4").size() == 1);
    assertEquals(new Progress.TimedOut(), exits("s4").get(0).outcome());
  }
}
