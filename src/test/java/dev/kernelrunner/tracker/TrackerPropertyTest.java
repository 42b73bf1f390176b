package dev.kernelrunner.tracker;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.kernelrunner.backend.RunOrder;
import dev.kernelrunner.bus.Addresses;
import dev.kernelrunner.bus.Failures;
import dev.kernelrunner.bus.LocalCodec;
import dev.kernelrunner.config.AppConfig;
import dev.kernelrunner.config.ConfigLoader;
import dev.kernelrunner.model.Cancel;
import dev.kernelrunner.model.EventAppend;
import dev.kernelrunner.model.EventFrame;
import dev.kernelrunner.model.EventType;
import dev.kernelrunner.model.EventWrite;
import dev.kernelrunner.model.LiveFrame;
import dev.kernelrunner.model.Mode;
import dev.kernelrunner.model.NewEvent;
import dev.kernelrunner.model.NewSubmission;
import dev.kernelrunner.model.Progress;
import dev.kernelrunner.model.Queues;
import dev.kernelrunner.model.Unfinished;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.eventbus.EventBus;
import io.vertx.core.json.JsonObject;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * The real tracker, deployed alone with a stubbed store and supervisor on the bus, driven through random
 * interleavings of agent events, timing verdicts, runs that end early or are lost, cancels, and a database that goes
 * away and comes back. Whatever happens: every submission ends exactly once, its stored events are in lifecycle
 * order with nothing after the end but one verdict (and that one only after a result whose verdict was pending),
 * a result published with its verdict to come always gets one, and every GPU slot and queue place is freed.
 * A fixed seed and a random one (printed on failure) run each time.
 */
class TrackerPropertyTest {
  private static final String GPU = "g";
  private static final int SUBMISSIONS = 40;

  @Test
  void everySubmissionEndsExactlyOnceWhateverHappens() throws Exception {
    long random = new Random().nextLong();
    for (long seed : new long[] {42L, 7L, random}) {
      try {
        trial(seed);
      } catch (AssertionError | Exception e) {
        throw new AssertionError("seed " + seed + ": " + e.getMessage(), e);
      }
    }
  }

  private void trial(long seed) throws Exception {
    Vertx vertx = Vertx.vertx();
    try {
      new Trial(vertx, new Random(seed)).run();
    } finally {
      vertx.close().toCompletionStage().toCompletableFuture().get(30, TimeUnit.SECONDS);
    }
  }

  /** One run of the tracker against the stubs; everything happens on one Vert.x context. */
  private static final class Trial {
    private final Vertx vertx;
    /** The one context the stubs, the agents' scripts and the checks run on: their state needs no locks. */
    private final io.vertx.core.Context context;
    private final EventBus bus;
    private final Random random;
    /** What the stub store holds: each submission's stored event types, in order. */
    private final Map<String, List<EventType>> stored = new HashMap<>();
    private final Map<String, Boolean> verdictPending = new HashMap<>();
    /** Each submission's current run (a lost run's script stops when a new one starts). */
    private final Map<String, Integer> runOf = new HashMap<>();
    private final List<String> ids = new ArrayList<>();
    private boolean databaseDown;
    private int scriptsRunning;

    Trial(Vertx vertx, Random random) {
      this.vertx = vertx;
      this.context = vertx.getOrCreateContext();
      this.bus = vertx.eventBus();
      this.random = random;
    }

    void run() throws Exception {
      LocalCodec.register(bus, RunOrder.Start.class, RunOrder.Kill.class, RunOrder.Stopped.class,
          RunOrder.Sweep.class, Queues.class, Queues.Asked.class);
      LocalCodec.register(bus, Progress.Event.class, Progress.Exit.class, EventAppend.class,
          EventAppend.Stored.class, EventWrite.class, LiveFrame.class, EventFrame.class, Cancel.class,
          Cancel.Outcome.class, Unfinished.class, Unfinished.Asked.class, NewSubmission.class,
          NewSubmission.Created.class);
      onContext(() -> {
        stubStore();
        stubSupervisor();
        return null;
      });
      AppConfig config = ConfigLoader.load(Map.of("DATABASE_EVENT_WRITE_RETRY_SECONDS", "60"));
      Map<String, AppConfig.GpuType> types = Map.of(GPU, new AppConfig.GpuType(GPU, AppConfig.LOCAL_BACKEND, 3));
      vertx.deployVerticle(new SubmissionTrackerVerticle(config, types, new SimpleMeterRegistry()))
          .toCompletionStage().toCompletableFuture().get(30, TimeUnit.SECONDS);
      CompletableFuture<Void> created = new CompletableFuture<>();
      context.runOnContext(v -> createAll(0, created));
      created.get(60, TimeUnit.SECONDS);
      // The database goes away and comes back at random while the runs go on.
      long outages = onContext(() -> vertx.setPeriodic(150,
          t -> databaseDown = !databaseDown && random.nextInt(3) == 0));
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(90);
      while (!allEnded()) {
        assertTrue(System.nanoTime() < deadline, "not every submission ended or freed its slot: unended "
            + onContext(this::unended) + ", agents running " + onContext(() -> scriptsRunning) + ", queues "
            + bus.request(Addresses.TRACKER_QUEUES, new Queues.Asked()).toCompletionStage().toCompletableFuture()
                .get(10, TimeUnit.SECONDS).body());
        Thread.sleep(100);
      }
      onContext(() -> {
        vertx.cancelTimer(outages);
        databaseDown = false;
        return null;
      });
      Thread.sleep(500); // a verdict or late event still in flight is stored or dropped by now
      check();
    }

    private void createAll(int i, CompletableFuture<Void> done) {
      if (i == SUBMISSIONS) {
        done.complete(null);
        return;
      }
      NewSubmission request = new NewSubmission("u" + random.nextInt(5), "leaky-relu", "cuda", GPU, "float32",
          "x", Mode.BENCHMARK, false);
      bus.<NewSubmission.Created>request(Addresses.SUBMISSIONS_CREATE, request).onComplete(ar -> {
        if (ar.succeeded()) {
          String id = ar.result().body().id();
          ids.add(id);
          if (random.nextInt(8) == 0) {
            vertx.setTimer(1 + random.nextInt(300), t -> cancel(id));
          }
        }
        createAll(i + 1, done);
      });
    }

    // ---- the stubs

    private void stubStore() {
      bus.<JsonObject>consumer(Addresses.STORE_SUBMISSION_CREATE, message -> {
        String id = message.body().getString("id");
        stored.put(id, new ArrayList<>(List.of(EventType.IN_QUEUE)));
        message.reply(new EventFrame(id, 1, EventType.IN_QUEUE, OffsetDateTime.now(), new JsonObject()));
      });
      bus.<EventAppend>consumer(Addresses.STORE_EVENTS_APPEND, message -> later(() -> {
        if (databaseDown) {
          message.fail(Failures.UNAVAILABLE, "database unavailable");
          return;
        }
        EventAppend append = message.body();
        List<EventFrame> frames = new ArrayList<>();
        for (NewEvent event : append.events()) {
          frames.add(store(append.submissionId(), event.type(), event.fields()));
        }
        message.reply(new EventAppend.Stored(frames));
      }));
      bus.<EventWrite>consumer(Addresses.STORE_SUBMISSION_REQUEUE, message -> later(() -> {
        if (databaseDown) {
          message.fail(Failures.UNAVAILABLE, "database unavailable");
          return;
        }
        EventWrite write = message.body();
        message.reply(store(write.submissionId(), write.event().type(), write.event().fields()));
      }));
      bus.<EventWrite>consumer(Addresses.STORE_EVENTS_VERIFIED, message -> later(() -> {
        if (databaseDown) {
          message.fail(Failures.UNAVAILABLE, "database unavailable");
          return;
        }
        String id = message.body().submissionId();
        if (!verdictPending.getOrDefault(id, false)) {
          message.fail(Failures.CONFLICT, "no verdict pending");
          return;
        }
        verdictPending.put(id, false);
        message.reply(store(id, EventType.VERIFIED, message.body().event().fields()));
      }));
      bus.<Unfinished.Asked>consumer(Addresses.STORE_SUBMISSION_UNFINISHED,
          message -> message.reply(new Unfinished(List.of())));
      bus.<Unfinished.Asked>consumer(Addresses.STORE_SUBMISSION_VERDICT_PENDING,
          message -> message.reply(new Unfinished(List.of())));
    }

    private EventFrame store(String id, EventType type, JsonObject fields) {
      List<EventType> types = stored.get(id);
      types.add(type);
      if (type == EventType.BENCHMARKED) {
        verdictPending.put(id, EventType.timingPending(fields));
      }
      return new EventFrame(id, types.size(), type, OffsetDateTime.now(), fields);
    }

    private void stubSupervisor() {
      bus.<RunOrder.Start>consumer(Addresses.SUPERVISOR_START, message -> {
        String id = message.body().submissionId();
        int run = runOf.merge(id, 1, Integer::sum);
        message.reply(true);
        scriptsRunning++;
        vertx.setTimer(1 + random.nextInt(20), t -> script(id, run, 0, random.nextInt(10)));
      });
      bus.<RunOrder.Kill>consumer(Addresses.SUPERVISOR_KILL, message -> {
        message.reply(new RunOrder.Stopped(null, true));
        String id = message.body().submissionId();
        vertx.setTimer(1 + random.nextInt(50), t -> exit(id, new Progress.Exit(id, new Progress.Killed(),
            List.of())));
      });
      bus.<RunOrder.Sweep>consumer(Addresses.SUPERVISOR_SWEEP, message -> message.reply(0));
    }

    /** Replies come after a random short while, as a database's do. */
    private void later(Runnable reply) {
      vertx.setTimer(1 + random.nextInt(15), t -> reply.run());
    }

    // ---- the agents

    private static final List<EventType> PATH = List.of(EventType.COMPILING, EventType.CHECKING,
        EventType.TEST_RESULT, EventType.CHECKED, EventType.BENCHMARKING, EventType.BENCHMARK_RESULT,
        EventType.BENCHMARKED);

    /**
     * A run's agent: the events of a benchmark, one at a time or two in a row (a worker's batch), and then its
     * exit; or, by {@code fate}: a crash part way (0), a lost machine part way (1), a result with its verdict to
     * come that arrives (2-5) or never does (6), or a plain result (7-9).
     */
    private void script(String id, int run, int step, int fate) {
      if (runOf.get(id) != run) {
        scriptsRunning--;
        return; // a later run of it took over
      }
      int stop = fate <= 1 ? random.nextInt(PATH.size()) : PATH.size();
      if (step == stop && fate <= 1) {
        scriptsRunning--;
        exit(id, new Progress.Exit(id, fate == 0 ? new Progress.Exited(3) : new Progress.Lost("the machine went away"),
            List.of("segfault")));
        return;
      }
      if (step == PATH.size()) {
        if (fate >= 2 && fate <= 5) {
          progress(id, EventType.VERIFIED, new JsonObject().put("timing", new JsonObject().put("status", "verified")));
        }
        scriptsRunning--;
        vertx.setTimer(1 + random.nextInt(20), t -> exit(id, new Progress.Exit(id, new Progress.Exited(0),
            List.of())));
        return;
      }
      EventType type = PATH.get(step);
      JsonObject fields = new JsonObject();
      if (type == EventType.BENCHMARKED && fate >= 2 && fate <= 6) {
        fields.put("verification", new JsonObject().put("timing", new JsonObject().put("status", "pending")));
      }
      progress(id, type, fields);
      boolean batch = random.nextInt(3) == 0; // the next one right behind it, as a worker's batch sends them
      vertx.setTimer(batch ? 1 : 1 + random.nextInt(30), t -> script(id, run, step + 1, fate));
    }

    private void progress(String id, EventType type, JsonObject fields) {
      bus.request(Addresses.SUBMISSIONS_PROGRESS, new Progress.Event(id, type, fields, fields.encode()));
    }

    private void exit(String id, Progress.Exit exit) {
      bus.request(Addresses.SUBMISSIONS_PROGRESS, exit);
    }

    private void cancel(String id) {
      // The tracker asks the supervisor to stop a running one; the run ends killed.
      bus.request(Addresses.TRACKER_CANCEL, new Cancel(id, "test", "user_requested"));
    }

    // ---- the invariants

    private boolean allEnded() throws Exception {
      return onContext(() -> ids.size() == SUBMISSIONS && unended().isEmpty() && scriptsRunning == 0) && idle();
    }

    /** Asked from the test's thread (the tracker answers on its own context). */
    private boolean idle() throws Exception {
      Queues.Queue queue = bus.<Queues>request(Addresses.TRACKER_QUEUES, new Queues.Asked())
          .toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS).body().of(GPU);
      return queue.running() == 0 && queue.queued() == 0;
    }

    private List<String> unended() {
      return ids.stream().filter(id -> stored.get(id).stream().filter(this::terminal).count() != 1).toList();
    }

    private boolean terminal(EventType type) {
      return type.isTerminal(Mode.BENCHMARK) && type != EventType.VERIFIED;
    }

    private void check() throws Exception {
      onContext(() -> {
        for (String id : ids) {
          List<EventType> types = stored.get(id);
          List<EventType> ends = types.stream().filter(this::terminal).toList();
          assertEquals(1, ends.size(), id + " ended once: " + types);
          int end = types.indexOf(ends.get(0));
          List<EventType> after = types.subList(end + 1, types.size());
          assertTrue(after.isEmpty() || after.equals(List.of(EventType.VERIFIED)), id + ": after its end " + types);
          if (ends.get(0) == EventType.BENCHMARKED) {
            assertTrue(!verdictPending.getOrDefault(id, false), id + " got its verdict: " + types);
          } else {
            assertTrue(after.isEmpty(), id + ": a verdict only after a result: " + types);
          }
          assertEquals(EventType.IN_QUEUE, types.get(0));
          for (int i = 1; i <= end; i++) {
            EventType before = types.get(i - 1);
            assertTrue(before.accepts(types.get(i), Mode.BENCHMARK) || types.get(i) == EventType.IN_QUEUE
                    || types.get(i).isTerminal(Mode.BENCHMARK),
                id + ": " + before + " then " + types.get(i) + " in " + types);
          }
        }
        return null;
      });
      assertTrue(idle(), "every slot and queue place is free");
    }

    /** Runs {@code check} on the trial's context (where the stubs keep their state) and waits for it. */
    private <T> T onContext(java.util.concurrent.Callable<T> check) throws Exception {
      CompletableFuture<T> result = new CompletableFuture<>();
      context.runOnContext(v -> {
        try {
          result.complete(check.call());
        } catch (Throwable e) {
          result.completeExceptionally(e);
        }
      });
      try {
        return result.get(30, TimeUnit.SECONDS);
      } catch (java.util.concurrent.ExecutionException e) {
        if (e.getCause() instanceof AssertionError assertion) {
          throw assertion;
        }
        throw e;
      }
    }
  }
}
