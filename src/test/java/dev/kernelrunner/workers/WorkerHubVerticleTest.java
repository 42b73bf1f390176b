package dev.kernelrunner.workers;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.kernelrunner.backend.AgentOutput;
import dev.kernelrunner.backend.Backend;
import dev.kernelrunner.backend.RunListener;
import dev.kernelrunner.bus.Addresses;
import dev.kernelrunner.bus.LocalCodec;
import dev.kernelrunner.config.ConfigLoader;
import dev.kernelrunner.model.EventType;
import dev.kernelrunner.model.Queues;
import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.eventbus.MessageConsumer;
import io.vertx.core.eventbus.ReplyException;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The worker hub deployed alone, the tracker's capacity address stubbed on the bus, the HTTP edge played by the test
 * (it sends the hub's {@link WorkerProtocol} messages and listens on each stream's push address) and the supervisor
 * played by the test through the hub's {@link Backend}. Covered: a worker connecting raises its GPU type's capacity
 * at the tracker and leaving lowers it; refused connects; a job reaches a free connected worker of its type only,
 * and only once its holder is stored; a machine that loses three jobs in a row gets only check jobs until one passes;
 * a job's lines are taken once each and in order; an exit ends the run with its code and tail once every line is
 * in; a kill ends a waiting job at once and asks a running one's worker; a worker gone past WORKER_LOST_SECONDS
 * makes its run lost, one back in time keeps it; a worker that changes GPU type has both types recounted.
 */
class WorkerHubVerticleTest {
  private static final WorkerProtocol.Token TOKEN = new WorkerProtocol.Token("t-gpu-box", "gpu-box", "box", true);
  private static final long WAIT_SECONDS = 10;

  private Vertx vertx;
  private WorkerHubVerticle hub;
  private final List<Queues.Capacity> capacities = new CopyOnWriteArrayList<>();

  /** One job stream as the HTTP edge opens it: its id, what the hub pushed on it, and the hub's hello. */
  record Stream(String connectionId, List<WorkerProtocol.Push> pushes, JsonObject hello) {
    List<WorkerProtocol.Push> of(String event) {
      return pushes.stream().filter(p -> p.event().equals(event)).toList();
    }
  }

  /** A run the test started through the hub's backend, as the supervisor does. */
  record Run(String submissionId, AgentOutput.EventKey key, JsonObject payload, Backend.RunHandle handle,
             Recorder listener) {
    String line(String type, JsonObject fields) {
      return AgentOutput.signedLine(key, fields.copy().put("type", type).encode());
    }

    /** Its job's id: the run name, less the holder's token id once a worker has it. */
    String jobId() {
      return handle.runName().split("~")[0];
    }
  }

  /** What the hub told the supervisor about one run, each call checked to come on the caller's context. */
  static final class Recorder implements RunListener {
    final List<String> calls = new CopyOnWriteArrayList<>();
    final List<JsonObject> eventFields = new CopyOnWriteArrayList<>();
    final List<Integer> positions = new CopyOnWriteArrayList<>();
    final AtomicInteger offContext = new AtomicInteger();
    volatile Context caller;
    volatile Integer exitCode;
    volatile List<String> tail;
    volatile String lostWhy;
    volatile long endedAtNanos;
    final List<String> runNames = new CopyOnWriteArrayList<>();
    /** Done when the supervisor has stored the run's name (the test says when). */
    volatile Promise<Void> nameStored = null;

    private void check() {
      if (Vertx.currentContext() != caller) {
        offContext.incrementAndGet();
      }
    }

    @Override
    public void onEvent(EventType type, JsonObject fields) {
      check();
      calls.add("event " + type);
      eventFields.add(fields);
    }

    @Override
    public void onExit(Integer exitCode, List<String> logTail) {
      check();
      this.exitCode = exitCode;
      this.tail = logTail;
      endedAtNanos = System.nanoTime();
      calls.add("exit " + exitCode);
    }

    @Override
    public void onFailed(EventType type, JsonObject fields, List<String> logTail) {
      check();
      calls.add("failed " + type);
    }

    @Override
    public void onLost(String reason, List<String> logTail) {
      check();
      this.lostWhy = reason;
      this.tail = logTail;
      endedAtNanos = System.nanoTime();
      calls.add("lost");
    }

    @Override
    public Future<Void> onRunName(String runName) {
      check();
      runNames.add(runName);
      return nameStored == null ? Future.succeededFuture() : nameStored.future();
    }

    @Override
    public void onLogPosition(int lines, String position) {
      check();
      positions.add(lines);
    }

    List<String> events() {
      return calls.stream().filter(c -> c.startsWith("event ")).toList();
    }

    List<String> ends() {
      return calls.stream().filter(c -> !c.startsWith("event ")).toList();
    }
  }

  @BeforeEach
  void deploy() throws Exception {
    vertx = Vertx.vertx();
    LocalCodec.register(vertx.eventBus(), WorkerProtocol.Connect.class, WorkerProtocol.Disconnect.class,
        WorkerProtocol.Lines.class, WorkerProtocol.Exit.class, WorkerProtocol.Consumed.class,
        WorkerProtocol.Push.class, Queues.Capacity.class);
    vertx.eventBus().<Queues.Capacity>consumer(Addresses.TRACKER_CAPACITY, message -> {
      capacities.add(message.body());
      message.reply(true);
    });
    // No local GPU types (they would be worker types too); MI300X stays a dstack type.
    var config = ConfigLoader.load(Map.of("WORKER_GPU_TYPES", "H100,A100", "LOCAL_GPU_TYPES", "",
        "WORKER_LOST_SECONDS", "1", "KILL_GRACE_SECONDS", "0", "WORKER_CHECK_SECONDS", "1"));
    hub = new WorkerHubVerticle(config);
    get(vertx.deployVerticle(hub));
  }

  @AfterEach
  void close() throws Exception {
    get(vertx.close());
  }

  // ---- helpers

  private static <T> T get(Future<T> future) throws Exception {
    return future.toCompletionStage().toCompletableFuture().get(WAIT_SECONDS, TimeUnit.SECONDS);
  }

  private static void await(BooleanSupplier done, Supplier<String> what) throws Exception {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(WAIT_SECONDS);
    while (!done.getAsBoolean() && System.nanoTime() < deadline) {
      Thread.sleep(10);
    }
    assertTrue(done.getAsBoolean(), () -> "expected within " + WAIT_SECONDS + " s: " + what.get());
  }

  /** Lets messages already on their way arrive, before asserting that something did not happen. */
  private static void settle(long millis) throws InterruptedException {
    Thread.sleep(millis);
  }

  private <T> T ask(String address, Object body) throws Exception {
    return get(vertx.eventBus().<T>request(address, body)).body();
  }

  private ReplyException refused(String address, Object body) throws Exception {
    try {
      get(vertx.eventBus().request(address, body));
    } catch (ExecutionException e) {
      assertTrue(e.getCause() instanceof ReplyException, "a failed reply, got " + e.getCause());
      return (ReplyException) e.getCause();
    }
    throw new AssertionError("expected " + address + " to refuse " + body);
  }

  /** Opens a job stream as the HTTP edge does: the push consumer first, then the connect. */
  private Stream connect(String workerId, String gpuType, String holding) throws Exception {
    return connect(workerId, gpuType, holding, "host-" + workerId);
  }

  private Stream connect(String workerId, String gpuType, String holding, String host) throws Exception {
    String connectionId = UUID.randomUUID().toString();
    List<WorkerProtocol.Push> pushes = new CopyOnWriteArrayList<>();
    MessageConsumer<WorkerProtocol.Push> consumer = vertx.eventBus().consumer(
        WorkerProtocol.pushAddress(connectionId), message -> pushes.add(message.body()));
    get(consumer.completion());
    JsonObject hello = ask(Addresses.WORKERS_CONNECT, new WorkerProtocol.Connect(connectionId, TOKEN, workerId,
        gpuType, host, "device-0", holding));
    return new Stream(connectionId, pushes, hello);
  }

  private void disconnect(Stream stream) throws Exception {
    ask(Addresses.WORKERS_DISCONNECT, new WorkerProtocol.Disconnect(stream.connectionId()));
  }

  /** Starts a run of {@code gpuType} through the hub's backend, on a context of its own (the supervisor's). */
  private Run start(String gpuType) throws Exception {
    return start(gpuType, new Recorder());
  }

  private Run start(String gpuType, Recorder listener) throws Exception {
    String submissionId = UUID.randomUUID().toString();
    AgentOutput.EventKey key = AgentOutput.EventKey.random();
    JsonObject payload = new JsonObject().put("submission_id", submissionId).put("gpu_type", gpuType)
        .put("event_key", key.base64()).put("code", "// code");
    Context supervisor = vertx.getOrCreateContext();
    listener.caller = supervisor;
    Promise<Backend.RunHandle> handle = Promise.promise();
    supervisor.runOnContext(v -> hub.backend().start(payload, listener).onComplete(handle));
    return new Run(submissionId, key, payload, get(handle.future()), listener);
  }

  private int lines(String workerId, Run run, int from, List<String> lines) throws Exception {
    WorkerProtocol.Consumed consumed = ask(Addresses.WORKERS_LINES,
        new WorkerProtocol.Lines(TOKEN.id(), workerId, run.jobId(), from, lines));
    return consumed.consumed();
  }

  private JsonObject exit(String workerId, Run run, int lines, Integer code, List<String> tail) throws Exception {
    return ask(Addresses.WORKERS_EXIT, new WorkerProtocol.Exit(TOKEN.id(), workerId, run.jobId(), lines,
        code, tail));
  }

  private JsonArray listed() throws Exception {
    JsonObject list = ask(Addresses.WORKERS_LIST, new JsonObject());
    return list.getJsonArray("workers");
  }

  private Integer lastCapacity(String gpuType) {
    Integer last = null;
    for (Queues.Capacity capacity : capacities) {
      if (capacity.gpuType().equals(gpuType)) {
        last = capacity.capacity();
      }
    }
    return last;
  }

  private void awaitCapacities(int count) throws Exception {
    await(() -> capacities.size() >= count, () -> count + " capacity messages, got " + capacities);
  }

  private JsonObject awaitJob(Stream stream) throws Exception {
    await(() -> !stream.of("job").isEmpty(), () -> "a job pushed to " + stream.connectionId() + ", got "
        + stream.pushes());
    return stream.of("job").get(0).data();
  }

  // ---- tests

  @Test
  void aConnectingWorkerRaisesItsTypesCapacityAndLeavingLowersIt() throws Exception {
    Stream a = connect("w-a", "H100", null);
    assertEquals("w-a", a.hello().getString("worker_id"), "the hello names the worker");
    assertNull(a.hello().getString("job_id"), "a fresh worker resumes no job");
    awaitCapacities(1);
    Stream b = connect("w-b", "H100", null);
    awaitCapacities(2);
    assertEquals(2, listed().size(), "both workers listed: " + listed());
    assertTrue(listed().getJsonObject(0).getBoolean("connected"), "a listed worker with a stream is connected");
    disconnect(a);
    awaitCapacities(3);
    disconnect(b);
    awaitCapacities(4);
    settle(100);
    assertEquals(List.of(new Queues.Capacity("H100", 1), new Queues.Capacity("H100", 2),
        new Queues.Capacity("H100", 1), new Queues.Capacity("H100", 0)), capacities,
        "the tracker hears H100's connected workers after each connect and disconnect, and of no other type");
    assertEquals(0, listed().size(), "a worker that left without a job is forgotten: " + listed());
    disconnect(a); // a stream closed twice (or never known) changes nothing
    settle(100);
    assertEquals(4, capacities.size(), "no capacity message for an unknown stream: " + capacities);
  }

  @Test
  void aWorkerIdNamesItsProcessAndItsGpu() {
    assertEquals("h.example:0a1b", WorkerHubVerticle.processOf("h.example:3:0a1b@2"));
    assertEquals("h.example:0a1b", WorkerHubVerticle.processOf("h.example:0:0a1b"), "every GPU of one process");
    assertEquals("h.example:3:0a1b", WorkerHubVerticle.gpuOf("h.example:3:0a1b@2"));
    assertEquals("h.example:3:0a1b", WorkerHubVerticle.gpuOf("h.example:3:0a1b"));
    assertEquals("w-a", WorkerHubVerticle.processOf("w-a"), "an id of another form is its own");
    assertEquals("w-a", WorkerHubVerticle.gpuOf("w-a"));
  }

  @Test
  void aJobGoesToAnIdleGpuBeforeTheOtherPlaceOfABusyOne() throws Exception {
    connect("gpu-host:0:run1", "H100", null, "gpu-host");
    Stream sibling = connect("gpu-host:0:run1@2", "H100", null, "gpu-host");
    Stream idle = connect("gpu-host:1:run1", "H100", null, "gpu-host");
    Run first = start("H100");
    assertEquals("gpu-host/gpu-host:0:run1", first.handle().node(), "every place free: the first");
    Run second = start("H100");
    assertEquals("gpu-host/gpu-host:1:run1", second.handle().node(), "GPU 0 runs a job: GPU 1 gets the next");
    assertEquals(second.jobId(), awaitJob(idle).getString("job_id"));
    Run third = start("H100");
    assertEquals("gpu-host/gpu-host:0:run1@2", third.handle().node(), "then the place beside a job");
    assertEquals(third.jobId(), awaitJob(sibling).getString("job_id"));
  }

  @Test
  void theTwoPlacesOfOneWorkerProcessAreNoRestartAnotherProcessIs() throws Exception {
    connect("gpu-host:0:run1", "H100", null, "gpu-host");
    connect("gpu-host:0:run1@2", "H100", null, "gpu-host");
    connect("gpu-host:1:run1", "H100", null, "gpu-host"); // its second GPU, of the same name
    assertEquals(List.of(false, false, false), listed().stream().map(JsonObject.class::cast)
        .map(w -> w.getJsonObject("health").getBoolean("restarted_recently")).toList(),
        "a GPU holding two jobs: one worker process, two places: " + listed());
    connect("gpu-host:0:run2", "H100", null, "gpu-host");
    assertTrue(listed().stream().map(JsonObject.class::cast)
        .allMatch(w -> w.getJsonObject("health").getBoolean("restarted_recently")),
        "a new run id on the machine: its worker process started again: " + listed());
  }

  @Test
  void aJobGoesToItsWorkerOnlyOnceItsHolderIsStored() throws Exception {
    // Before, the job was pushed at once: a restart before the name was stored left it for any token to take.
    Recorder slow = new Recorder();
    slow.nameStored = Promise.promise();
    Run run = start("H100", slow);
    Stream worker = connect("w-1", "H100", null);
    await(() -> !slow.runNames.isEmpty(), () -> "the run renamed for its holder");
    assertEquals(run.jobId() + "~" + TOKEN.id(), slow.runNames.get(0), "the name says which token holds it");
    settle(200);
    assertEquals(List.of(), worker.of("job"), "not pushed while its holder is not stored");
    vertx.runOnContext(v -> slow.nameStored.complete());
    assertEquals(run.jobId(), awaitJob(worker).getString("job_id"), "pushed once it is");

    // Cancelled in between: it ends at once, and its worker never sees it.
    Recorder cancelled = new Recorder();
    cancelled.nameStored = Promise.promise();
    Run other = start("H100", cancelled);
    Stream second = connect("w-2", "H100", null);
    await(() -> !cancelled.runNames.isEmpty(), () -> "the second run renamed");
    other.handle().kill();
    await(() -> !cancelled.ends().isEmpty(), () -> "the cancelled run ended: " + cancelled.calls);
    assertEquals(List.of("exit null"), cancelled.ends(), "ended once, without an exit code");
    vertx.runOnContext(v -> cancelled.nameStored.complete());
    settle(200);
    assertEquals(List.of(), second.pushes(), "neither the job nor a cancel reached the worker");
  }

  @Test
  void aMachineThatLosesThreeJobsInARowIsQuarantinedUntilItPassesACheckJob() throws Exception {
    for (int i = 0; i < 3; i++) {
      Run run = start("H100");
      Stream stream = connect("w-1", "H100", null);
      awaitJob(stream);
      disconnect(stream); // and not back within WORKER_LOST_SECONDS
      await(() -> run.listener().lostWhy != null, () -> "job lost: " + run.listener().calls);
    }
    Stream back = connect("w-1", "H100", null);
    JsonObject check = awaitJob(back);
    assertTrue(check.getBoolean("check"), "a check job, not a user's: " + check);
    JsonObject payload = check.getJsonObject("payload");
    assertEquals("check", payload.getString("mode"));
    assertEquals("vector-addition", payload.getString("problem"));
    assertTrue(payload.getString("code").contains("solution("), "a known kernel: " + payload.getString("code"));
    JsonObject health = listed().getJsonObject(0).getJsonObject("health");
    assertTrue(health.getBoolean("quarantined"), health.encode());
    assertEquals(3, health.getInteger("losses_in_a_row"));
    Run waiting = start("H100");
    settle(200);
    assertEquals(1, back.of("job").size(), "no user job while quarantined: " + back.pushes());

    // A check that fails leaves it quarantined; another comes after WORKER_CHECK_SECONDS.
    answerCheck("w-1", check, "WRONG_ANSWER", 1);
    await(() -> back.of("job").size() == 2, () -> "a second check job: " + back.pushes());
    health = listed().getJsonObject(0).getJsonObject("health");
    assertTrue(health.getBoolean("quarantined"), health.encode());
    assertFalse(health.getJsonObject("check").getBoolean("passed"), health.encode());
    assertTrue(health.getJsonObject("check").getString("detail").contains("WRONG_ANSWER"), health.encode());
    JsonObject second = back.of("job").get(1).data();
    assertTrue(second.getBoolean("check"), second.encode());

    // One that passes lets it back: the waiting user job goes to it.
    answerCheck("w-1", second, "CHECKED", 0);
    await(() -> back.of("job").size() == 3, () -> "the user job: " + back.pushes());
    assertEquals(waiting.jobId(), back.of("job").get(2).data().getString("job_id"));
    health = listed().getJsonObject(0).getJsonObject("health");
    assertFalse(health.getBoolean("quarantined"), health.encode());
    assertEquals(0, health.getInteger("losses_in_a_row"));
    assertTrue(health.getJsonObject("check").getBoolean("passed"), health.encode());
    assertEquals(List.of(), waiting.listener().ends(), "the user's run goes on");
  }

  /** The worker's answer to a check job: COMPILING, then {@code last}, then its exit. */
  private void answerCheck(String workerId, JsonObject job, String last, int exitCode) throws Exception {
    AgentOutput.EventKey key = AgentOutput.EventKey.of(job.getJsonObject("payload").getString("event_key"));
    List<String> lines = List.of(AgentOutput.signedLine(key, new JsonObject().put("type", "COMPILING").encode()),
        AgentOutput.signedLine(key, new JsonObject().put("type", last).put("message", "m").encode()));
    String jobId = job.getString("job_id");
    WorkerProtocol.Consumed consumed = ask(Addresses.WORKERS_LINES,
        new WorkerProtocol.Lines(TOKEN.id(), workerId, jobId, 0, lines));
    assertEquals(2, consumed.consumed());
    JsonObject ended = ask(Addresses.WORKERS_EXIT, new WorkerProtocol.Exit(TOKEN.id(), workerId, jobId, 2, exitCode,
        List.of()));
    assertTrue(ended.getBoolean("ended"), ended.encode());
  }

  @Test
  void aTypeNotServedByWorkersOrAnotherTokensWorkerIdIsRefused() throws Exception {
    ReplyException stranger = refused(Addresses.WORKERS_CONNECT, new WorkerProtocol.Connect("c-1", TOKEN,
        "w-x", "MI300X", "h", "d", null));
    assertEquals(400, stranger.failureCode(), "a dstack type is not a worker type");
    assertTrue(stranger.getMessage().contains("WORKER_GPU_TYPES"), "the refusal names the setting: "
        + stranger.getMessage());
    connect("w-1", "H100", null);
    ReplyException taken = refused(Addresses.WORKERS_CONNECT, new WorkerProtocol.Connect("c-2",
        new WorkerProtocol.Token("t-other", "someone-else", "box", true),
        "w-1", "H100", "h", "d", null));
    assertEquals(409, taken.failureCode(), "another token may not take over a worker id");
    awaitCapacities(1);
    settle(100);
    assertEquals(List.of(new Queues.Capacity("H100", 1)), capacities, "only the accepted worker counts");
  }

  @Test
  void aJobGoesToAFreeConnectedWorkerOfItsTypeOnly() throws Exception {
    Run a100 = start("A100");
    assertEquals("waiting for a worker", a100.handle().node(), "no A100 worker yet: the job waits");
    assertTrue(a100.jobId().startsWith(a100.submissionId() + "."), "the job id is the submission's");
    assertTrue(a100.handle().survivesRestart(), "a worker's job outlives the service");
    Stream h100 = connect("w-h", "H100", null);
    settle(200);
    assertEquals(List.of(), h100.pushes(), "an H100 worker gets no A100 job");
    Stream worker = connect("w-a", "A100", null);
    JsonObject job = awaitJob(worker);
    assertEquals(a100.jobId(), job.getString("job_id"), "the waiting job goes to the A100 worker");
    assertEquals(a100.submissionId(), job.getString("submission_id"), "the job names its submission");
    assertEquals(a100.payload(), job.getJsonObject("payload"), "the worker gets the run's payload as given");

    Run second = start("A100");
    assertEquals("waiting for a worker", second.handle().node(), "the only A100 worker is busy: the job waits");
    Run h100Run = start("H100");
    assertEquals("host-w-h/w-h", h100Run.handle().node(), "a free H100 worker takes an H100 job at once");
    assertEquals(h100Run.jobId(), awaitJob(h100).getString("job_id"), "pushed to the H100 worker");
    settle(200);
    assertEquals(1, worker.of("job").size(), "a busy worker gets one job at a time: " + worker.pushes());
    JsonObject running = listed().stream().map(JsonObject.class::cast)
        .filter(w -> w.getString("id").equals("w-a")).findFirst().orElseThrow();
    assertEquals("RUNNING", running.getJsonObject("current_job").getString("state"), "listed: " + running);

    Promise<Backend.RunHandle> refused = Promise.promise();
    Context supervisor = vertx.getOrCreateContext();
    supervisor.runOnContext(v -> hub.backend().start(new JsonObject().put("submission_id", UUID.randomUUID()
        .toString()).put("gpu_type", "MI300X").put("event_key", AgentOutput.EventKey.random().base64()),
        new Recorder()).onComplete(refused));
    ExecutionException failure = assertThrows(ExecutionException.class,
        () -> get(refused.future()), "a type no worker serves is refused");
    assertTrue(failure.getCause().getMessage().contains("MI300X"), "the refusal names the type: " + failure);
  }

  @Test
  void linesAreTakenOnceEachAndInOrder() throws Exception {
    Run run = start("H100");
    awaitJob(connect("w-1", "H100", null));
    String compiling = run.line("COMPILING", new JsonObject());
    String checking = run.line("CHECKING", new JsonObject().put("total_tests", 3));
    String checked = run.line("CHECKED", new JsonObject().put("passed_tests", 3).put("total_tests", 3));
    assertEquals(2, lines("w-1", run, 0, List.of(compiling, "a log line")), "two lines taken");
    assertEquals(2, lines("w-1", run, 3, List.of(checked)), "a batch past a gap is not taken");
    assertEquals(2, lines("w-1", run, -1, List.of("x")), "a negative index is not taken");
    assertEquals(3, lines("w-1", run, 0, List.of(compiling, "a log line", checking)),
        "a batch sent again: only its new line is taken");
    assertEquals(3, lines("w-1", run, 1, List.of("a log line", checking)), "a whole batch seen before: nothing");
    assertEquals(4, lines("w-1", run, 3, List.of(checked)), "the next line goes on from where the hub is");
    ReplyException stolen = refused(Addresses.WORKERS_LINES,
        new WorkerProtocol.Lines(TOKEN.id(), "w-other", run.jobId(), 4, List.of(checked)));
    assertEquals(404, stolen.failureCode(), "another worker may not speak for the job");
    ReplyException unknown = refused(Addresses.WORKERS_LINES,
        new WorkerProtocol.Lines(TOKEN.id(), "w-1", run.submissionId() + ".00000000", 0, List.of(checked)));
    assertEquals(404, unknown.failureCode(), "no such job: drop it");
    await(() -> run.listener().positions.contains(4), () -> "position 4, got " + run.listener().positions);
    assertEquals(List.of("event COMPILING", "event CHECKING", "event CHECKED"), run.listener().events(),
        "each event once, in the agent's order");
    assertEquals(3, run.listener().eventFields.get(1).getInteger("total_tests"), "the event's fields come along");
    assertEquals(List.of(2, 3, 4), run.listener().positions.stream().distinct().toList(),
        "the log position only grows, with the lines taken");
    assertEquals(0, run.listener().offContext.get(), "the listener is called on the supervisor's context");
    assertEquals(List.of(), run.listener().ends(), "lines end nothing");
  }

  @Test
  void theWorkersExitEndsTheRunWithItsCodeOnceEveryLineIsIn() throws Exception {
    Run first = start("H100");
    Run next = start("H100");
    Stream worker = connect("w-1", "H100", null);
    assertEquals(first.jobId(), awaitJob(worker).getString("job_id"), "the first job goes first");
    assertEquals(2, lines("w-1", first, 0, List.of(first.line("COMPILING", new JsonObject()), "compiler says hi")),
        "two lines in");
    JsonObject early = exit("w-1", first, 3, 7, List.of());
    assertFalse(early.getBoolean("ended"), "an exit after lines the hub does not have ends nothing");
    assertEquals(2, early.getInteger("consumed"), "and says where the lines stop");
    settle(100);
    assertEquals(List.of(), first.listener().ends(), "no end yet");
    assertEquals(1, worker.of("job").size(), "the next job waits for the worker");

    assertTrue(exit("w-1", first, 2, 7, List.of("stderr: boom")).getBoolean("ended"), "the exit is taken");
    await(() -> first.listener().exitCode != null, () -> "the run's exit, got " + first.listener().calls);
    assertEquals(List.of("event COMPILING", "exit 7"), first.listener().calls, "events, then one exit with its code");
    assertEquals(List.of("compiler says hi", "stderr: boom"), first.listener().tail,
        "the tail: the log lines, then the agent's stderr");
    assertEquals(0, first.listener().offContext.get(), "the listener is called on the supervisor's context");

    await(() -> worker.of("job").size() == 2, () -> "the next job pushed, got " + worker.pushes());
    assertEquals(next.jobId(), worker.of("job").get(1).data().getString("job_id"),
        "the freed worker takes the waiting job");
    assertEquals(1, listed().getJsonObject(0).getInteger("jobs_done"), "one job done: " + listed());
    assertEquals(404, refused(Addresses.WORKERS_LINES, new WorkerProtocol.Lines(TOKEN.id(), "w-1",
        first.jobId(), 2, List.of("late"))).failureCode(), "lines of an ended job: drop it");
    assertEquals(404, refused(Addresses.WORKERS_EXIT, new WorkerProtocol.Exit(TOKEN.id(), "w-1",
        first.jobId(), 2, 0, List.of())).failureCode(), "a second exit: drop it");
    settle(100);
    assertEquals(List.of("event COMPILING", "exit 7"), first.listener().calls, "the run ended once");
  }

  @Test
  void aKillEndsAWaitingJobAtOnceAndAsksARunningJobsWorker() throws Exception {
    Run waiting = start("A100");
    waiting.handle().kill();
    await(() -> !waiting.listener().ends().isEmpty(), () -> "the waiting job's end");
    assertEquals(List.of("exit null"), waiting.listener().ends(), "a waiting job killed ends with no exit code");
    Stream idle = connect("w-a", "A100", null);
    settle(200);
    assertEquals(List.of(), idle.of("job"), "a killed job is no longer handed out");

    Run running = start("H100");
    Stream worker = connect("w-h", "H100", null);
    awaitJob(worker);
    running.handle().kill();
    running.handle().kill();
    await(() -> !worker.of("cancel").isEmpty(), () -> "a cancel pushed, got " + worker.pushes());
    settle(100);
    assertEquals(1, worker.of("cancel").size(), "one cancel however often it is killed");
    assertEquals(running.jobId(), worker.of("cancel").get(0).data().getString("job_id"),
        "the cancel names the job");
    assertEquals(List.of(), running.listener().ends(), "a running job ends when its worker says so");
    assertTrue(exit("w-h", running, 0, 143, List.of()).getBoolean("ended"), "the worker's exit is taken");
    await(() -> !running.listener().ends().isEmpty(), () -> "the running job's end");
    assertEquals(List.of("exit 143"), running.listener().ends(), "ended with the worker's exit code");
  }

  @Test
  void aWorkerGonePastTheLostTimeMakesItsRunLost() throws Exception {
    Run run = start("H100");
    Stream worker = connect("w-1", "H100", null);
    awaitJob(worker);
    assertEquals(1, lines("w-1", run, 0, List.of("working")), "one line in");
    awaitCapacities(1);
    long gone = System.nanoTime();
    disconnect(worker);
    awaitCapacities(2);
    assertEquals(new Queues.Capacity("H100", 0), capacities.get(1), "a worker away with a job counts no more");
    JsonObject away = listed().getJsonObject(0);
    assertFalse(away.getBoolean("connected"), "listed as away: " + away);
    assertEquals("AWAY", away.getJsonObject("current_job").getString("state"), "its job waits for it: " + away);
    await(() -> run.listener().lostWhy != null, () -> "the run lost, got " + run.listener().calls);
    long afterMillis = TimeUnit.NANOSECONDS.toMillis(run.listener().endedAtNanos - gone);
    assertTrue(afterMillis >= 900, "lost only after WORKER_LOST_SECONDS=1, was after " + afterMillis + " ms");
    assertEquals(List.of("lost"), run.listener().ends(), "lost, not exited");
    assertTrue(run.listener().lostWhy.contains("w-1") && run.listener().lostWhy.contains("1 s"),
        "the reason names the worker and the time: " + run.listener().lostWhy);
    assertEquals(List.of("working"), run.listener().tail, "the tail of what it printed comes along");
    assertEquals(0, listed().size(), "the worker is forgotten: " + listed());

    Stream late = connect("w-1", "H100", run.jobId());
    assertNull(late.hello().getString("job_id"), "too late: the hub gives no job back");
    await(() -> !late.of("drop").isEmpty(), () -> "a drop pushed, got " + late.pushes());
    assertEquals(run.jobId(), late.of("drop").get(0).data().getString("job_id"), "drop that job");
    settle(100);
    assertEquals(List.of("lost"), run.listener().ends(), "the run ended once");
  }

  @Test
  void aWorkerBackInTimeKeepsItsJob() throws Exception {
    Run run = start("H100");
    Stream first = connect("w-1", "H100", null);
    awaitJob(first);
    String checking = run.line("CHECKING", new JsonObject().put("total_tests", 1));
    assertEquals(2, lines("w-1", run, 0, List.of(run.line("COMPILING", new JsonObject()), "log")), "two lines in");
    disconnect(first);
    Stream back = connect("w-1", "H100", run.jobId());
    assertEquals(run.jobId(), back.hello().getString("job_id"), "back in time: the job is still its");
    assertEquals(2, back.hello().getInteger("resume_from"), "it goes on from the lines the hub has");
    settle(1500); // past WORKER_LOST_SECONDS=1
    assertEquals(List.of(), run.listener().ends(), "a worker back in time does not lose its run");
    assertEquals(List.of(), back.of("drop"), "nothing to drop: " + back.pushes());
    assertEquals(3, lines("w-1", run, 2, List.of(checking)), "its lines go on");
    assertTrue(exit("w-1", run, 3, 0, List.of()).getBoolean("ended"), "its exit is taken");
    await(() -> !run.listener().ends().isEmpty(), () -> "the run's end");
    assertEquals(List.of("event COMPILING", "event CHECKING", "exit 0"), run.listener().calls,
        "the run goes on and ends as the worker says");
    awaitCapacities(3);
    assertEquals(List.of(1, 0, 1), capacities.stream().map(Queues.Capacity::capacity).toList(),
        "H100 capacity: connected, away, back");
  }

  @Test
  void aWorkerBackInTimeWithoutItsJobHasTheRunLostAtOnce() throws Exception {
    Run run = start("H100");
    Stream first = connect("w-1", "H100", null);
    awaitJob(first);
    disconnect(first);
    long back = System.nanoTime();
    Stream again = connect("w-1", "H100", null);
    await(() -> run.listener().lostWhy != null, () -> "the run lost, got " + run.listener().calls);
    assertTrue(TimeUnit.NANOSECONDS.toMillis(run.listener().endedAtNanos - back) < 900,
        "lost at once, not after WORKER_LOST_SECONDS");
    assertTrue(run.listener().lostWhy.contains("came back without it"), "why: " + run.listener().lostWhy);
    Run next = start("H100");
    assertEquals(next.jobId(), awaitJob(again).getString("job_id"), "the worker is free for the next");
  }

  @Test
  void aWorkerBackAsAnotherTypeCountsForTheNewTypeOnly() throws Exception {
    Stream h100 = connect("w-1", "H100", null);
    awaitCapacities(1);
    disconnect(h100);
    awaitCapacities(2);
    connect("w-1", "A100", null);
    awaitCapacities(3);
    settle(100);
    assertEquals(List.of(new Queues.Capacity("H100", 1), new Queues.Capacity("H100", 0),
        new Queues.Capacity("A100", 1)), capacities, "the old type loses the worker, the new one gains it");
    assertEquals("A100", listed().getJsonObject(0).getString("gpu_type"), "listed under its new type");
  }

  @Test
  // Issue 28 (ghost capacity): only the new type used to be recounted.
  void aNewStreamOfAnotherTypeUnderTheSameIdRecountsBothTypes() throws Exception {
    Stream h100 = connect("w-1", "H100", null);
    awaitCapacities(1);
    connect("w-1", "A100", null); // the old stream is still open (half-open): the new one takes over
    await(() -> !h100.of("replaced").isEmpty(), () -> "the old stream replaced, got " + h100.pushes());
    await(() -> Integer.valueOf(1).equals(lastCapacity("A100")), () -> "A100 capacity 1, got " + capacities);
    settle(200);
    assertEquals(Integer.valueOf(0), lastCapacity("H100"),
        "no H100 worker is connected any more: the tracker must hear H100 capacity 0, heard " + capacities);
  }

  @Test
  // The dropped job used to stay bound to its worker until WORKER_LOST_SECONDS, and the worker got no new job.
  void aWorkerBackAsAnotherTypeHoldingItsJobIsFreeForItsNewType() throws Exception {
    Run h100Run = start("H100");
    Stream first = connect("w-1", "H100", null);
    awaitJob(first);
    disconnect(first);
    Run a100Run = start("A100");
    Stream back = connect("w-1", "A100", h100Run.jobId());
    await(() -> !back.of("drop").isEmpty(), () -> "the held job dropped, got " + back.pushes());
    await(() -> h100Run.listener().lostWhy != null, () -> "the dropped run lost, got " + h100Run.listener().calls);
    settle(500);
    List<String> jobs = new ArrayList<>();
    back.of("job").forEach(p -> jobs.add(p.data().getString("job_id")));
    assertEquals(List.of(a100Run.jobId()), jobs,
        "the A100 worker, its old job dropped, must get the waiting A100 job");
  }
}
