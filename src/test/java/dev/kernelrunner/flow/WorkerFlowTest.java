package dev.kernelrunner.flow;

import static dev.kernelrunner.support.SseClient.types;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.kernelrunner.backend.AgentOutput;
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
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Workers that pull work (issue 15): the real worker ({@code python3 -m remote_agent worker}, with the fake agent
 * as its job command) and a scripted one that speaks the worker protocol line by line, against the whole service.
 */
@ExtendWith(VertxExtension.class)
class WorkerFlowTest {
  private static final Duration WAIT = Duration.ofSeconds(30);
  private static final String GPU = "H100";

  private Vertx vertx;
  private TestService service;
  private int port;
  private String workerToken;
  private String user;
  private final List<Process> workers = new ArrayList<>();

  @BeforeEach
  void start(Vertx vertx) throws Exception {
    this.vertx = vertx;
    port = Ports.free();
    service = TestService.start(vertx, env());
    workerToken = token("worker", "gpu-box");
    user = service.userToken("wendy");
  }

  private Map<String, String> env() {
    // No local GPU types: the only workers are the ones a test starts (local ones would be listed beside them).
    return Map.of("WORKER_GPU_TYPES", GPU, "WORKER_LOST_SECONDS", "2", "HTTP_PORT", String.valueOf(port),
        "MAX_ACTIVE_PER_USER", "20", "LOCAL_GPU_TYPES", "");
  }

  @AfterEach
  void stop() throws Exception {
    for (Process worker : workers) {
      killTree(worker);
    }
    if (service != null) {
      service.close();
    }
  }

  @Test
  void aWorkerRunsJobsAndTheyArriveWholeAndInOrder() throws Exception {
    Response types = service.get("/api/gpu-types", user);
    assertEquals(0, gpuType(types).getInteger("capacity"), types.body());
    startWorker("w1");
    awaitCapacity(1);
    for (int i = 0; i < 3; i++) {
      String id = submit("// agent: ok\n// delay: 0.02");
      List<Frame> frames = follow(id);
      assertEquals("BENCHMARKED", last(frames), frames.toString());
      assertEquals(List.of("IN_QUEUE", "PROVISIONING", "COMPILING", "CHECKING"), types(frames).subList(0, 4));
      assertStoredOnceInOrder(id);
    }
    // A job is done once its exit is in, which may come just after its last event.
    long deadline = System.nanoTime() + WAIT.toNanos();
    JsonArray listed;
    do {
      Thread.sleep(20);
      listed = service.get("/api/admin/workers", TestService.ADMIN_TOKEN).json().getJsonArray("workers");
    } while (listed.size() == 1 && listed.getJsonObject(0).getInteger("jobs_done") < 3 && System.nanoTime() < deadline);
    assertEquals(1, listed.size(), listed.encode());
    JsonObject worker = listed.getJsonObject(0);
    assertEquals(GPU, worker.getString("gpu_type"));
    assertEquals("gpu-box", worker.getString("token_user"));
    assertEquals(3, worker.getInteger("jobs_done"));
    assertTrue(worker.getBoolean("connected"));
    assertNotNull(worker.getString("device"));
  }

  @Test
  void tokensKeepToTheirOwnApi() throws Exception {
    assertEquals(403, service.get("/api/submissions", workerToken).status());
    assertEquals(403, service.post("/api/submissions", workerToken,
        submission("// agent: ok").encode()).status());
    assertEquals(403, service.get("/api/admin/workers", workerToken).status());
    assertEquals(403, service.get("/api/worker/stream?worker_id=x&gpu_type=" + GPU, user).status());
    assertEquals(403, service.post("/api/worker/jobs/" + "0".repeat(8) + "-0000-0000-0000-" + "0".repeat(12)
        + ".00000000/lines", user, "{\"from\":0,\"lines\":[]}").status());
    assertEquals(403, service.get("/api/worker/stream?worker_id=x&gpu_type=" + GPU, TestService.ADMIN_TOKEN)
        .status());
    // A type no worker may serve is refused, naming the setting.
    try (ScriptedWorker stranger = ScriptedWorker.open(port, workerToken, "s1", "MI300X", null)) {
      assertEquals(400, stranger.status);
      assertTrue(stranger.error.contains("WORKER_GPU_TYPES"), stranger.error);
    }
  }

  @Test
  void linesSentTwiceOrOutOfOrderAreStoredOnceInOrder() throws Exception {
    try (ScriptedWorker worker = ScriptedWorker.open(port, workerToken, "scripted-1", GPU, null)) {
      assertEquals(200, worker.status);
      String id = submit("// agent: ok");
      JsonObject job = worker.next("job");
      String jobId = job.getString("job_id");
      AgentOutput.EventKey key = AgentOutput.EventKey.of(job.getJsonObject("payload").getString("event_key"));
      List<String> lines = List.of(
          signed(key, "COMPILING", new JsonObject()),
          "a log line, not an event",
          signed(key, "CHECKING", new JsonObject().put("total_tests", 1)),
          signed(key, "TEST_RESULT", new JsonObject().put("result", new JsonObject().put("test_id", 1)
              .put("name", "t1").put("status", "PASSED")).put("total_tests", 1)),
          signed(key, "CHECKED", new JsonObject().put("passed_tests", 1).put("total_tests", 1)),
          signed(key, "BENCHMARKING", new JsonObject().put("total_tests", 0)),
          signed(key, "BENCHMARKED", new JsonObject().put("avg_runtime_ms", 1.0).put("test_results", new JsonArray())));
      assertEquals(2, worker.lines(jobId, 0, lines.subList(0, 2)).getInteger("consumed"));
      // Out of order: a batch past a gap is not taken; the answer says where to go on from.
      assertEquals(2, worker.lines(jobId, 4, lines.subList(4, 6)).getInteger("consumed"));
      // Twice: the head of this batch was taken before and is skipped.
      assertEquals(4, worker.lines(jobId, 0, lines.subList(0, 4)).getInteger("consumed"));
      assertEquals(4, worker.lines(jobId, 1, lines.subList(1, 4)).getInteger("consumed"));
      // An exit before every line is in says what is missing and ends nothing.
      JsonObject early = worker.exit(jobId, 7, 0);
      assertFalse(early.getBoolean("ended"));
      assertEquals(4, early.getInteger("consumed"));
      assertEquals(7, worker.lines(jobId, 4, lines.subList(4, 7)).getInteger("consumed"));
      assertTrue(worker.exit(jobId, 7, 0).getBoolean("ended"));
      List<Frame> frames = follow(id);
      assertEquals(List.of("IN_QUEUE", "PROVISIONING", "COMPILING", "CHECKING", "TEST_RESULT", "CHECKED",
          "BENCHMARKING", "BENCHMARKED"), types(frames));
      assertStoredOnceInOrder(id);
      // The job is over: anything more about it is refused, and the worker is told to drop it.
      assertEquals(404, worker.post("/api/worker/jobs/" + jobId + "/lines",
          new JsonObject().put("from", 7).put("lines", new JsonArray().add("late"))).status());
    }
  }

  @Test
  void twoWorkersRacingForOneJobOneGetsIt() throws Exception {
    try (ScriptedWorker a = ScriptedWorker.open(port, workerToken, "race-a", GPU, null);
         ScriptedWorker b = ScriptedWorker.open(port, workerToken, "race-b", GPU, null)) {
      awaitCapacity(2);
      String id = submit("// agent: ok");
      JsonObject jobA = a.poll("job", Duration.ofSeconds(3));
      JsonObject jobB = b.poll("job", Duration.ofSeconds(1));
      assertTrue(jobA == null ^ jobB == null, "exactly one worker gets the job: " + jobA + " / " + jobB);
      ScriptedWorker winner = jobA != null ? a : b;
      ScriptedWorker loser = jobA != null ? b : a;
      JsonObject job = jobA != null ? jobA : jobB;
      String jobId = job.getString("job_id");
      AgentOutput.EventKey key = AgentOutput.EventKey.of(job.getJsonObject("payload").getString("event_key"));
      // The other may not speak for it.
      Response stolen = loser.post("/api/worker/jobs/" + jobId + "/lines", new JsonObject().put("from", 0)
          .put("lines", new JsonArray().add(signed(key, "COMPILE_ERROR", new JsonObject().put("message", "x")))));
      assertEquals(404, stolen.status(), stolen.body());
      winner.lines(jobId, 0, List.of(signed(key, "COMPILING", new JsonObject()),
          signed(key, "COMPILE_ERROR", new JsonObject().put("message", "nvcc: no"))));
      winner.exit(jobId, 2, 1);
      List<Frame> frames = follow(id);
      assertEquals("COMPILE_ERROR", last(frames));
      assertEquals("nvcc: no", frames.get(frames.size() - 1).data().getString("message"));
    }
  }

  @Test
  void aWorkerKilledMidJobHasItRequeuedOnceThenErrorTheSecondTime() throws Exception {
    Process first = startWorker("killed-1");
    awaitCapacity(1);
    String id = submit("// agent: ok\n// delay: 0.5");
    awaitStatus(id, "CHECKING");
    killTree(first); // the machine is gone: the worker and its job's processes
    Process second = startWorker("killed-2");
    List<Frame> frames = follow(id);
    assertEquals("BENCHMARKED", last(frames), frames.toString());
    Frame requeued = frames.stream().filter(f -> f.event().equals("IN_QUEUE")
        && "worker_lost".equals(f.data().getString("reason"))).findFirst().orElseThrow();
    assertTrue(requeued.data().getString("message").contains("did not come back"), requeued.toString());
    assertEquals(1, service.get("/api/submissions/" + id, TestService.ADMIN_TOKEN).json()
        .getInteger("restart_count", 1));

    // Lost twice: ERROR, not a third try.
    String twice = submit("// agent: ok\n// delay: 0.5");
    awaitStatus(twice, "CHECKING");
    killTree(second);
    Process third = startWorker("killed-3");
    awaitRestarts(twice, 1);
    awaitStatus(twice, "CHECKING");
    killTree(third);
    List<Frame> ended = follow(twice);
    assertEquals("ERROR", last(ended), ended.toString());
    assertTrue(ended.get(ended.size() - 1).data().getString("message").contains("did not come back"));
  }

  /**
   * Issue 27's run generations: a worker whose job was re-queued (its stream gone past WORKER_LOST_SECONDS) comes
   * back and speaks for the old run, its lines and its end: refused (404, drop it), and the submission ends with
   * the second run's result alone, stored once.
   */
  @Test
  void aWorkerBackAfterItsJobWasRequeuedIsToldToDropItAndChangesNothing() throws Exception {
    ScriptedWorker first = ScriptedWorker.open(port, workerToken, "gone-1", GPU, null);
    awaitCapacity(1);
    String id = submit("// agent: ok");
    JsonObject job = first.next("job");
    String oldJob = job.getString("job_id");
    AgentOutput.EventKey oldKey = AgentOutput.EventKey.of(job.getJsonObject("payload").getString("event_key"));
    first.lines(oldJob, 0, List.of(signed(oldKey, "COMPILING", new JsonObject())));
    first.close(); // its stream is gone: the job is lost after 2 s and re-queued
    awaitRestarts(id, 1);
    try (ScriptedWorker second = ScriptedWorker.open(port, workerToken, "gone-2", GPU, null)) {
      JsonObject rerun = second.next("job");
      String newJob = rerun.getString("job_id");
      assertFalse(oldJob.equals(newJob), "a new run, a new job id");
      Response late = first.post("/api/worker/jobs/" + oldJob + "/lines", new JsonObject().put("from", 1)
          .put("lines", new JsonArray().add(signed(oldKey, "COMPILE_ERROR", new JsonObject().put("message", "old")))));
      assertEquals(404, late.status(), late.body());
      Response lateExit = first.post("/api/worker/jobs/" + oldJob + "/exit",
          new JsonObject().put("lines", 2).put("exit_code", 1));
      assertEquals(404, lateExit.status(), lateExit.body());
      AgentOutput.EventKey key = AgentOutput.EventKey.of(rerun.getJsonObject("payload").getString("event_key"));
      second.lines(newJob, 0, List.of(signed(key, "COMPILING", new JsonObject()),
          signed(key, "COMPILE_ERROR", new JsonObject().put("message", "new"))));
      second.exit(newJob, 2, 1);
      List<Frame> frames = follow(id);
      assertEquals("COMPILE_ERROR", last(frames));
      assertEquals("new", frames.get(frames.size() - 1).data().getString("message"), frames.toString());
      assertEquals(List.of("IN_QUEUE", "PROVISIONING", "COMPILING", "IN_QUEUE", "PROVISIONING", "COMPILING",
          "COMPILE_ERROR"), types(frames), "each run's events once, the old one's late words nowhere");
      assertGapless(frames);
    }
  }

  @Test
  void theServiceRestartedWhileAWorkerRunsAJobLosesAndRepeatsNothing() throws Exception {
    startWorker("restart-1");
    awaitCapacity(1);
    String id = submit("// agent: ok\n// delay: 0.3");
    awaitStatus(id, "CHECKING");
    Path dataDir = service.dataDir();
    String database = service.databaseUrl();
    service.close();
    service = null;
    Thread.sleep(1500); // the worker's job goes on, its lines are kept until the service is back
    // The worker's reconnect pause doubles while the service is away: the new service gives it time to come back.
    Map<String, String> patient = new HashMap<>(env());
    patient.put("WORKER_LOST_SECONDS", "30");
    service = TestService.start(vertx, patient, database, dataDir);
    List<Frame> frames = follow(id);
    assertEquals("BENCHMARKED", last(frames), frames.toString());
    assertTrue(frames.stream().noneMatch(f -> "worker_lost".equals(f.data().getString("reason"))), frames.toString());
    assertStoredOnceInOrder(id);
    assertEquals(0, service.get("/api/submissions/" + id, TestService.ADMIN_TOKEN).json()
        .getInteger("restart_count", 0));
  }

  @Test
  void cancelReachesTheWorkerAndItsJobIsGoneWhenTheAnswerComes() throws Exception {
    startWorker("cancel-1");
    awaitCapacity(1);
    String id = submit("// agent: hang");
    awaitStatus(id, "COMPILING");
    assertFalse(jobProcesses().isEmpty(), "the job's agent runs");
    Response cancelled = service.post("/api/submissions/" + id + "/cancel", user, "");
    assertEquals(202, cancelled.status(), cancelled.body());
    assertEquals("CANCELLED", cancelled.json().getString("status"), cancelled.body());
    assertEquals(List.of(), jobProcesses(), "no process of the job is left when the cancel is answered");
    // The worker is free again.
    assertEquals("BENCHMARKED", last(follow(submit("// agent: ok"))));
  }

  @Test
  void theWarmPathRunsTheRealAgentAndLeavesNothingBehind() throws Exception {
    // No GPU here: the real agent, started before its job and handed the payload on stdin, ends it with its own
    // ERROR; what it started ahead (the solution's and the judge's processes) goes with it.
    Process worker = startWorker("warm-1", false);
    awaitCapacity(2); // the warm path's default: its one GPU holds two jobs, each place a worker (--jobs-per-gpu)
    String id = submit("__global__ void k() {}");
    List<Frame> frames = follow(id);
    assertEquals("ERROR", last(frames), frames.toString());
    assertTrue(frames.get(frames.size() - 1).data().getString("message").contains("no GPU"), frames.toString());
    // One snapshot decides: between two reads the worker may be starting its next spare (no command line yet).
    long deadline = System.nanoTime() + WAIT.toNanos();
    List<String> left = workerChildren(worker);
    while (!left.isEmpty() && System.nanoTime() < deadline) {
      Thread.sleep(50);
      left = workerChildren(worker);
    }
    assertEquals(List.of(), left);
  }

  // ---- helpers

  /** The worker's live processes but the agent it keeps ready for the next job and what that one started. */
  private static List<String> workerChildren(Process worker) {
    List<ProcessHandle> ready = worker.children().filter(p -> p.info().commandLine().orElse("")
        .contains("--payload -")).toList();
    return worker.descendants().filter(ProcessHandle::isAlive)
        .filter(p -> ready.stream().noneMatch(r -> r.equals(p) || r.descendants().anyMatch(p::equals)))
        .map(p -> p.info().commandLine().orElse("?")).toList();
  }

  private JsonObject gpuType(Response types) {
    for (Object type : types.json().getJsonArray("gpu_types")) {
      if (GPU.equals(((JsonObject) type).getString("name"))) {
        return (JsonObject) type;
      }
    }
    throw new AssertionError("no " + GPU + " in " + types.body());
  }

  private void awaitCapacity(int capacity) throws Exception {
    long deadline = System.nanoTime() + WAIT.toNanos();
    while (gpuType(service.get("/api/gpu-types", user)).getInteger("capacity") != capacity) {
      assertTrue(System.nanoTime() < deadline, "capacity never reached " + capacity);
      Thread.sleep(50);
    }
  }

  private void awaitStatus(String id, String status) throws Exception {
    service.awaitStatus(id, status, WAIT);
  }


  private void awaitRestarts(String id, int restarts) throws Exception {
    long deadline = System.nanoTime() + WAIT.toNanos();
    while (service.get("/api/submissions/" + id, TestService.ADMIN_TOKEN).json().getInteger("restart_count")
        != restarts) {
      assertTrue(System.nanoTime() < deadline, id + " never had " + restarts + " restart(s)");
      Thread.sleep(20);
    }
  }

  private String submit(String code) throws Exception {
    Response response = service.post("/api/submissions", user, submission(code).encode());
    assertEquals(201, response.status(), response.body());
    return response.json().getString("id");
  }

  private static JsonObject submission(String code) {
    return TestService.submission(code, "benchmark").put("gpu_type", GPU);
  }

  private List<Frame> follow(String id) throws Exception {
    try (SseClient events = service.events(id, user, Map.of())) {
      return events.untilEnd(Duration.ofSeconds(60));
    }
  }

  private static String last(List<Frame> frames) {
    return frames.isEmpty() ? null : frames.get(frames.size() - 1).event();
  }

  /** Every stored event once, with seqs 1, 2, 3, ... */
  private void assertStoredOnceInOrder(String id) throws Exception {
    List<Frame> frames = follow(id);
    assertGapless(frames);
    assertEquals(1, frames.stream().filter(f -> f.event().equals("COMPILING")).count(), frames.toString());
  }

  /** Seqs 1, 2, 3, ...: nothing stored twice, nothing missing. */
  private static void assertGapless(List<Frame> frames) {
    for (int i = 0; i < frames.size(); i++) {
      assertEquals(i + 1, frames.get(i).id(), frames.toString());
    }
  }

  private String token(String role, String name) throws Exception {
    Response created = service.post("/api/admin/tokens", TestService.ADMIN_TOKEN,
        new JsonObject().put("role", role).put("user_id", name).encode());
    assertEquals(201, created.status(), created.body());
    return created.json().getString("token");
  }

  /** An agent's line of {@code type} with {@code fields}, signed with the run's key (as a worker relays it). */
  static String signed(AgentOutput.EventKey key, String type, JsonObject fields) {
    return AgentOutput.signedLine(key, fields.copy().put("type", type).encode());
  }

  private Process startWorker(String host) throws IOException {
    return startWorker(host, true);
  }

  private Process startWorker(String host, boolean fakeAgent) throws IOException {
    Process process = PullWorkers.start(service, port, workerToken, GPU, host, fakeAgent);
    workers.add(process);
    return process;
  }

  private static void killTree(Process process) throws InterruptedException {
    PullWorkers.killTree(process);
  }

  /** Live processes running a job's payload (the worker writes it to a kr-job-* folder). */
  private static List<Long> jobProcesses() {
    return ProcessHandle.allProcesses().filter(p -> p.info().commandLine().orElse("").contains("kr-job-"))
        .map(ProcessHandle::pid).toList();
  }

  /** A worker played by the test, one protocol step at a time. */
  static final class ScriptedWorker implements AutoCloseable {
    private final HttpClient http = HttpClient.newHttpClient();
    private final BlockingQueue<String[]> pushes = new LinkedBlockingQueue<>();
    private final int port;
    private final String token;
    private final String workerId;
    private InputStream body;
    int status;
    String error = "";

    private ScriptedWorker(int port, String token, String workerId) {
      this.port = port;
      this.token = token;
      this.workerId = workerId;
    }

    static ScriptedWorker open(int port, String token, String workerId, String gpuType, String holding)
        throws Exception {
      return open(port, token, workerId, gpuType, holding, "test", "scripted");
    }

    /** A worker on {@code host}'s GPU {@code device} (a machine's GPU is known by its token, host and device). */
    static ScriptedWorker open(int port, String token, String workerId, String gpuType, String holding, String host,
                               String device) throws Exception {
      return open(port, token, workerId, gpuType, holding, host, device, null);
    }

    /**
     * As above, proving with {@code machine} (a {@link dev.kernelrunner.workers.MachineKey}'s base64; null: no
     * proof) that it runs on the machine its token is bound to.
     */
    static ScriptedWorker open(int port, String token, String workerId, String gpuType, String holding, String host,
                               String device, String machine) throws Exception {
      ScriptedWorker worker = new ScriptedWorker(port, token, workerId);
      String query = "worker_id=" + workerId + "&gpu_type=" + gpuType + "&host=" + host + "&device=" + device
          + (holding == null ? "" : "&job=" + holding);
      HttpRequest.Builder request = HttpRequest.newBuilder(
              URI.create("http://127.0.0.1:" + port + "/api/worker/stream?" + query))
          .header("Authorization", "Bearer " + token).header("Accept", "text/event-stream");
      if (machine != null) {
        request.header("X-Machine-Proof", dev.kernelrunner.workers.MachineKey.parse(machine)
            .proof(workerId, System.currentTimeMillis() / 1000));
      }
      HttpResponse<InputStream> response = worker.http.send(request.build(), HttpResponse.BodyHandlers.ofInputStream());
      worker.status = response.statusCode();
      worker.body = response.body();
      if (worker.status != 200) {
        worker.error = new String(worker.body.readAllBytes(), StandardCharsets.UTF_8);
        return worker;
      }
      Thread reader = new Thread(worker::read, "scripted-worker-" + workerId);
      reader.setDaemon(true);
      reader.start();
      return worker;
    }

    private void read() {
      try (BufferedReader in = new BufferedReader(new InputStreamReader(body, StandardCharsets.UTF_8))) {
        String event = null;
        StringBuilder data = new StringBuilder();
        String line;
        while ((line = in.readLine()) != null) {
          if (line.isEmpty()) {
            if (event != null) {
              pushes.add(new String[] {event, data.toString()});
            }
            event = null;
            data.setLength(0);
          } else if (line.startsWith("event: ")) {
            event = line.substring(7);
          } else if (line.startsWith("data: ")) {
            data.append(line.substring(6));
          }
        }
      } catch (IOException e) {
        // closed
      }
    }

    JsonObject poll(String event, Duration timeout) throws InterruptedException {
      long deadline = System.nanoTime() + timeout.toNanos();
      while (true) {
        String[] push = pushes.poll(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
        if (push == null) {
          return null;
        }
        if (push[0].equals(event)) {
          return new JsonObject(push[1]);
        }
      }
    }

    JsonObject next(String event) throws InterruptedException {
      JsonObject found = poll(event, WAIT);
      assertNotNull(found, "no " + event + " pushed to " + workerId);
      return found;
    }

    Response post(String path, JsonObject body) throws Exception {
      HttpResponse<String> response = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
          .header("Authorization", "Bearer " + token).header("X-Worker-Id", workerId)
          .header("Content-Type", "application/json")
          .POST(HttpRequest.BodyPublishers.ofString(body.encode())).build(), HttpResponse.BodyHandlers.ofString());
      return new Response(response.statusCode(), response.body(), new HashMap<>(response.headers().map()));
    }

    JsonObject lines(String jobId, int from, List<String> lines) throws Exception {
      Response response = post("/api/worker/jobs/" + jobId + "/lines",
          new JsonObject().put("from", from).put("lines", new JsonArray(new ArrayList<>(lines))));
      assertEquals(200, response.status(), response.body());
      return response.json();
    }

    JsonObject exit(String jobId, int lines, Integer code) throws Exception {
      Response response = post("/api/worker/jobs/" + jobId + "/exit",
          new JsonObject().put("lines", lines).put("exit_code", code));
      assertEquals(200, response.status(), response.body());
      return response.json();
    }

    @Override
    public void close() throws IOException {
      if (body != null) {
        body.close();
      }
    }
  }
}
