package dev.kernelrunner.supervisor;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import dev.kernelrunner.bus.Addresses;
import dev.kernelrunner.bus.LocalCodec;
import dev.kernelrunner.config.AppConfig;
import dev.kernelrunner.config.ConfigLoader;
import dev.kernelrunner.model.Queues;
import dev.kernelrunner.support.Processes;
import dev.kernelrunner.support.TempDirs;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The local workers' verticle deployed alone in a fresh Vert.x, its neighbours stubbed on the bus (the store's
 * {@code store.token.revoke} and {@code store.token.create}, the tracker's {@code tracker.fail-queued}), with
 * {@code LOCAL_WORKER_COMMAND} a script that plays the worker ({@code local-workers/fake-worker.sh}: it records each
 * start's argv, environment, pid, user and folder, then sleeps, ends at once or ignores TERM, as files in the
 * test's AGENT_WORKDIR say). AGENT_USER is left at its default: as root the workers run as that unprivileged user,
 * as anyone else as the test's own. Covers: the start revokes the token user's earlier worker tokens before it makes
 * one for pool {@code local} (trusted, LOCAL_GPU_TYPES); one worker per type with its exact command line (server,
 * type, host, a slot per LOCAL_MAX_CONCURRENT, parent pid, identity under DATA_DIR) and the token in its environment
 * only; {@code --job-command} only for a custom AGENT_COMMAND; a worker that ends is started again; one that ends at
 * once three times in a row makes the tracker fail its type's queue; undeploying stops the workers (KILL for one
 * that ignores TERM) and revokes the token.
 */
class LocalWorkersVerticleTest {
  private static final String TOKEN = "kr_test";
  private static final String TOKEN_ID = "0123456789abcdef";
  private static final int PORT = 4242;
  /** How long the store's revoke stub takes to answer: the start must wait for it before it creates the token. */
  private static final long REVOKE_DELAY_MS = 300;
  private static final Duration WAIT = Duration.ofSeconds(10);

  private Vertx vertx;
  private Path dataDir;
  private Path workdir;
  private Path script;
  /** What the store was asked, in order ({address, body}); {address: "revoke answered"} marks a revoke's reply. */
  private final List<JsonObject> storeCalls = new CopyOnWriteArrayList<>();
  private final List<Queues.FailQueued> failQueued = new CopyOnWriteArrayList<>();
  /** For each fail-queued message: how many starts its type's worker had had when it came. */
  private final List<Integer> startsAtFailQueued = new CopyOnWriteArrayList<>();

  /** One start of the fake worker, as it recorded it. */
  record Start(List<String> argv, Map<String, String> env, long pid, int uid, Path cwd, long startedMillis) {}

  @BeforeEach
  void stubNeighbours() throws Exception {
    vertx = Vertx.vertx();
    LocalCodec.register(vertx.eventBus(), Queues.FailQueued.class);
    vertx.eventBus().<JsonObject>consumer(Addresses.STORE_TOKEN_REVOKE, message -> {
      storeCalls.add(new JsonObject().put("address", Addresses.STORE_TOKEN_REVOKE).put("body", message.body()));
      vertx.setTimer(REVOKE_DELAY_MS, t -> {
        storeCalls.add(new JsonObject().put("address", "revoke answered"));
        message.reply(new JsonObject().put("revoked", 1));
      });
    });
    vertx.eventBus().<JsonObject>consumer(Addresses.STORE_TOKEN_CREATE, message -> {
      storeCalls.add(new JsonObject().put("address", Addresses.STORE_TOKEN_CREATE).put("body", message.body()));
      message.reply(new JsonObject().put("token", TOKEN).put("id", TOKEN_ID));
    });
    vertx.eventBus().<Queues.FailQueued>consumer(Addresses.TRACKER_FAIL_QUEUED, message -> {
      startsAtFailQueued.add(starts(message.body().gpuType()).size());
      failQueued.add(message.body());
      message.reply(2);
    });
    dataDir = TempDirs.directory("kr-local-workers-data");
    // The worker runs here, as the agent user when the test runs as root: it must be able to enter and read it.
    workdir = TempDirs.directory("kr-local-workers-work");
    Files.setPosixFilePermissions(workdir, PosixFilePermissions.fromString("rwxr-xr-x"));
    script = workdir.resolve("fake-worker.sh");
    try (InputStream in = getClass().getResourceAsStream("/local-workers/fake-worker.sh")) {
      assertTrue(in != null, "the fake worker script is on the test classpath");
      Files.copy(in, script);
    }
    Files.setPosixFilePermissions(script, PosixFilePermissions.fromString("rwxr-xr-x"));
  }

  @AfterEach
  void close() throws Exception {
    try {
      vertx.close().toCompletionStage().toCompletableFuture().get(30, TimeUnit.SECONDS);
    } finally {
      // Whatever a failed test left running (vertx.close() undeploys, which should have stopped them all).
      for (String type : List.of("alpha", "beta")) {
        starts(type).forEach(s -> ProcessHandle.of(s.pid()).ifPresent(ProcessHandle::destroyForcibly));
      }
      delete(dataDir);
      delete(workdir);
      delete(Path.of(workdir + "-gone"));
    }
  }

  // ---------------------------------------------------------------------------------------------------- tests

  @Test
  void theStartRevokesTheEarlierWorkerTokensThenCreatesOneForTheLocalPool() throws Exception {
    deploy(Map.of("LOCAL_GPU_TYPES", "alpha,beta"));
    assertEquals(List.of(
        call(Addresses.STORE_TOKEN_REVOKE, new JsonObject().put("user_id", "local-workers").put("role", "worker")),
        new JsonObject().put("address", "revoke answered"),
        call(Addresses.STORE_TOKEN_CREATE, new JsonObject().put("user_id", "local-workers").put("role", "worker")
            .put("created_by", "service").put("pool", "local").put("gpu_types", new JsonArray().add("alpha")
                .add("beta")).put("trusted", true))),
        storeCalls, "revoke every live worker token of user local-workers, and only once that is answered create "
            + "one of pool local, trusted, for LOCAL_GPU_TYPES");
    assertEquals(List.of(), failQueued, "nothing failed");
  }

  @Test
  void eachLocalTypeGetsOneWorkerWithItsCommandLineAndTheTokenInItsEnvironmentOnly() throws Exception {
    deploy(Map.of("LOCAL_GPU_TYPES", "alpha,beta", "LOCAL_MAX_CONCURRENT", "3"));
    await("a start of each type's worker", () -> starts("alpha").size() == 1 && starts("beta").size() == 1);
    Path home = home();
    int expectedUid = (Integer) Files.getAttribute(home, "unix:uid");
    for (String type : List.of("alpha", "beta")) {
      Start start = starts(type).get(0);
      assertEquals(List.of("--server", "http://127.0.0.1:" + PORT, "--gpu-type", type, "--host", "local",
              "--gpus", "0,1,2", "--jobs-per-gpu", "1", "--parent-pid", String.valueOf(ProcessHandle.current().pid()),
              "--identity", home.resolve("machine.key").toString()),
          start.argv(), "the worker's arguments after LOCAL_WORKER_COMMAND (HTTP_HOST 0.0.0.0 is reached as "
              + "127.0.0.1; a slot per LOCAL_MAX_CONCURRENT; no --job-command for the default AGENT_COMMAND)");
      assertFalse(String.join(" ", start.argv()).contains(TOKEN), "the token is never on the command line");
      assertEquals(TOKEN, start.env().get("KERNEL_RUNNER_WORKER_TOKEN"), "the token is in the environment");
      assertEquals(home.toString(), start.env().get("HOME"), "HOME is the workers' folder under DATA_DIR/runs");
      assertFalse(start.env().containsKey("KERNEL_RUNNER_SUBMISSION_ID"), "a worker is no submission's run");
      assertEquals("1", start.env().get("PYTHONNOUSERSITE"), "the agent sandbox's environment");
      assertEquals(workdir.toRealPath(), start.cwd().toRealPath(), "the worker runs in AGENT_WORKDIR");
      assertEquals(expectedUid, start.uid(), "the worker runs as the owner of its folder");
      if ("root".equals(System.getProperty("user.name"))) {
        assertNotEquals(0, start.uid(), "as root, the worker runs as the unprivileged AGENT_USER");
      }
      assertTrue(Processes.alive(start.pid()), "the worker is running");
      assertTrue(Files.readString(home.resolve(type + ".log")).contains("fake worker for " + type + ": start 1"),
          "the worker's output goes to <type>.log in its folder");
    }
    assertEquals(List.of(), failQueued, "nothing failed");
  }

  @Test
  void aCustomAgentCommandIsGivenToTheWorkersAsTheJobCommand() throws Exception {
    deploy(Map.of("AGENT_COMMAND", "python3 \"/opt/my agents/agent.py\" --mode=fast"));
    await("a start of the worker", () -> starts("alpha").size() == 1);
    List<String> argv = starts("alpha").get(0).argv();
    assertEquals(List.of("--job-command", "python3 '/opt/my agents/agent.py' --mode=fast"),
        argv.subList(argv.size() - 2, argv.size()),
        "the custom AGENT_COMMAND, last, as one word the worker's shlex.split gives back: " + argv);
    assertEquals(1, argv.stream().filter("--job-command"::equals).count(), "once: " + argv);
  }

  @Test
  void aWorkerThatEndsIsStartedAgainWithTheSameCommandLine() throws Exception {
    deploy(Map.of());
    await("a start of the worker", () -> starts("alpha").size() == 1);
    Start first = starts("alpha").get(0);
    ProcessHandle.of(first.pid()).orElseThrow().destroyForcibly();
    await("the worker started again", () -> starts("alpha").size() == 2);
    Start second = starts("alpha").get(1);
    assertNotEquals(first.pid(), second.pid(), "a new process");
    assertFalse(Processes.alive(first.pid()), "the first one is gone");
    assertTrue(Processes.alive(second.pid()), "the second one runs");
    assertEquals(first.argv(), second.argv(), "the same command line");
    assertEquals(TOKEN, second.env().get("KERNEL_RUNNER_WORKER_TOKEN"), "the same token");
    assertTrue(second.startedMillis() - first.startedMillis() >= 900,
        "after the 1 s pause: " + (second.startedMillis() - first.startedMillis()) + " ms");
    assertEquals(List.of(), failQueued, "one end is no failure");
    assertEquals(2, storeCalls.stream().filter(c -> !c.getString("address").equals("revoke answered")).count(),
        "no new token for the new worker: " + storeCalls);
  }

  @Test
  void aWorkerThatEndsAtOnceThreeTimesInARowFailsItsTypesQueuedSubmissions() throws Exception {
    control("exit-alpha", "7");
    deploy(Map.of("LOCAL_GPU_TYPES", "alpha,beta"));
    await("the tracker told that alpha's worker does not start", () -> !failQueued.isEmpty());
    assertEquals(new Queues.FailQueued("alpha", "this host's worker for alpha does not start (it ended 3 times in a "
            + "row within seconds, last with code 7): the service's log says why"), failQueued.get(0),
        "the type and why, naming the count and the last exit code");
    assertEquals(3, startsAtFailQueued.get(0), "told after the third quick end, not before");
    List<Start> alpha = starts("alpha");
    long firstPause = alpha.get(1).startedMillis() - alpha.get(0).startedMillis();
    long secondPause = alpha.get(2).startedMillis() - alpha.get(1).startedMillis();
    assertTrue(firstPause >= 900 && secondPause >= 1900 && secondPause > firstPause,
        "a pause that doubles while it keeps ending (1 s, 2 s): " + firstPause + " ms, " + secondPause + " ms");
    assertEquals(1, starts("beta").size(), "the other type's worker was started once and keeps running");
    assertTrue(Processes.alive(starts("beta").get(0).pid()), "beta's worker runs");
    assertTrue(failQueued.stream().allMatch(f -> f.gpuType().equals("alpha")), "only alpha failed: " + failQueued);
  }

  @Test
  void undeployingStopsTheWorkersAndRevokesTheToken() throws Exception {
    String id = deploy(Map.of("LOCAL_GPU_TYPES", "alpha,beta"));
    await("a start of each type's worker", () -> starts("alpha").size() == 1 && starts("beta").size() == 1);
    List<Long> pids = Stream.of("alpha", "beta").map(t -> starts(t).get(0).pid()).toList();
    storeCalls.clear();
    vertx.undeploy(id).toCompletionStage().toCompletableFuture().get(30, TimeUnit.SECONDS);
    for (long pid : pids) {
      assertFalse(Processes.alive(pid), "worker " + pid + " is gone once the undeploy is done");
    }
    assertEquals(List.of(call(Addresses.STORE_TOKEN_REVOKE, new JsonObject().put("id", TOKEN_ID)),
        new JsonObject().put("address", "revoke answered")), storeCalls, "the workers' token is revoked by its id");
    Thread.sleep(1500); // longer than the 1 s pause before a restart
    assertEquals(1, starts("alpha").size(), "a worker stopped with the service is not started again");
    assertEquals(1, starts("beta").size(), "a worker stopped with the service is not started again");
    assertEquals(List.of(), failQueued, "stopping is no failure");
  }

  @Test
  void undeployingKillsAWorkerThatIgnoresTerm() throws Exception {
    control("ignore-term-alpha", "");
    String id = deploy(Map.of("KILL_GRACE_SECONDS", "0"));
    await("a start of the worker", () -> starts("alpha").size() == 1);
    long pid = starts("alpha").get(0).pid();
    long begin = System.nanoTime();
    vertx.undeploy(id).toCompletionStage().toCompletableFuture().get(30, TimeUnit.SECONDS);
    long tookMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - begin);
    assertFalse(Processes.alive(pid), "the worker that ignored TERM is gone (KILLed)");
    assertTrue(tookMillis >= 1900, "TERM first, KILL only after KILL_GRACE_SECONDS + 2 s: " + tookMillis + " ms");
    assertEquals(1, starts("alpha").size(), "not started again");
  }

  @Test
  // Found by this test, fixed in LocalWorkersVerticle.
  void aWorkerThatCannotBeStartedAgainIsRetriedAndReported() throws Exception {
    deploy(Map.of());
    await("a start of the worker", () -> starts("alpha").size() == 1);
    Files.move(workdir, Path.of(workdir + "-gone"));
    ProcessHandle.of(starts("alpha").get(0).pid()).orElseThrow().destroyForcibly();
    await("the tracker told that alpha's worker does not start (as after three ends within seconds)",
        () -> !failQueued.isEmpty());
    assertEquals("alpha", failQueued.get(0).gpuType(), "the type that has no worker");
  }

  @Test
  // Found by this test, fixed in LocalWorkersVerticle.
  void anIpv6HttpHostIsBracketedInTheServerUrl() throws Exception {
    AppConfig config = config(Map.of("HTTP_HOST", "::1"));
    List<String> argv = new LocalWorkersVerticle(config, () -> PORT).argv("alpha");
    assertEquals("http://[::1]:" + PORT, argv.get(argv.indexOf("--server") + 1), "an IPv6 literal in brackets");
  }

  // -------------------------------------------------------------------------------------------------- helpers

  private AppConfig config(Map<String, String> settings) {
    Map<String, String> env = new HashMap<>(Map.of("DATA_DIR", dataDir.toString(), "AGENT_WORKDIR",
        workdir.toString(), "LOCAL_WORKER_COMMAND", "/bin/sh " + script, "LOCAL_GPU_TYPES", "alpha"));
    env.putAll(settings);
    return ConfigLoader.load(env);
  }

  /** Deploys the verticle alone with the test's settings and {@code settings}; its deployment id. */
  private String deploy(Map<String, String> settings) throws Exception {
    return vertx.deployVerticle(new LocalWorkersVerticle(config(settings), () -> PORT))
        .toCompletionStage().toCompletableFuture().get(30, TimeUnit.SECONDS);
  }

  private static JsonObject call(String address, JsonObject body) {
    return new JsonObject().put("address", address).put("body", body);
  }

  /** A file in AGENT_WORKDIR that tells the fake worker what to do; readable by the agent user. */
  private void control(String name, String content) throws IOException {
    Path file = workdir.resolve(name);
    Files.writeString(file, content);
    Files.setPosixFilePermissions(file, PosixFilePermissions.fromString("rw-r--r--"));
  }

  private Path home() {
    return dataDir.toAbsolutePath().resolve("runs").resolve("local-workers");
  }

  /** The starts of {@code type}'s worker so far, as the fake worker recorded them (each whole, or not yet). */
  private List<Start> starts(String type) {
    Path dir = home().resolve("starts").resolve(type);
    List<Start> starts = new ArrayList<>();
    try {
      for (int n = 1; Files.isDirectory(dir.resolve(String.valueOf(n))); n++) {
        Path record = dir.resolve(String.valueOf(n));
        Map<String, String> env = new LinkedHashMap<>();
        for (String line : Files.readAllLines(record.resolve("env"))) {
          int eq = line.indexOf('=');
          if (eq > 0) {
            env.put(line.substring(0, eq), line.substring(eq + 1));
          }
        }
        starts.add(new Start(Files.readAllLines(record.resolve("argv")), env,
            Long.parseLong(Files.readString(record.resolve("pid")).trim()),
            Integer.parseInt(Files.readString(record.resolve("uid")).trim()),
            Path.of(Files.readString(record.resolve("cwd")).trim()),
            Long.parseLong(Files.readString(record.resolve("started")).trim())));
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return starts;
  }

  private void await(String what, BooleanSupplier done) throws InterruptedException {
    long deadline = System.nanoTime() + WAIT.toNanos();
    while (!done.getAsBoolean()) {
      if (System.nanoTime() > deadline) {
        fail("not within " + WAIT.toSeconds() + " s: " + what + " (starts: alpha " + starts("alpha").size()
            + ", beta " + starts("beta").size() + "; store: " + storeCalls + "; fail-queued: " + failQueued + ")");
      }
      Thread.sleep(25);
    }
  }

  private static void delete(Path root) throws IOException {
    if (root == null || !Files.exists(root)) {
      return;
    }
    try (Stream<Path> paths = Files.walk(root)) {
      for (Path path : paths.sorted(Comparator.reverseOrder()).toList()) {
        Files.deleteIfExists(path);
      }
    }
  }
}
