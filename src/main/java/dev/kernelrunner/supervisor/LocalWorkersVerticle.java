package dev.kernelrunner.supervisor;

import dev.kernelrunner.backend.ShellWords;
import dev.kernelrunner.bus.Addresses;
import dev.kernelrunner.bus.Bus;
import dev.kernelrunner.config.AppConfig;
import dev.kernelrunner.model.Queues;
import io.vertx.core.Future;
import io.vertx.core.VerticleBase;
import io.vertx.core.json.JsonObject;
import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.IntSupplier;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * By default ({@code LOCAL_WORKERS=true}) this host's GPU types are served the way other machines' are, by workers
 * that pull jobs over the worker API: one worker process per local type ({@code LOCAL_WORKER_COMMAND} in
 * AGENT_WORKDIR, in the agent sandbox) with one slot per {@code LOCAL_MAX_CONCURRENT} ({@code --gpus 0,1,...},
 * one job each), and a worker token the service made for them at start and revokes when it stops (and, at start,
 * any that an earlier instance killed outright left live; its workers, told the service's pid, stop once it is
 * gone). A custom
 * {@code AGENT_COMMAND} keeps its meaning: the workers run it once per job ({@code --job-command}); the default one
 * means the worker's warm path. A worker that ends is started again ({@code exited}); stopping the service stops
 * them (TERM, then KILL).
 */
public class LocalWorkersVerticle extends VerticleBase {
  private static final Logger log = LoggerFactory.getLogger(LocalWorkersVerticle.class);
  private static final String DEFAULT_AGENT = "python3 -m remote_agent";
  /** The user of the workers' token: how the rest of the service tells this host's workers from others. */
  public static final String TOKEN_USER = "local-workers";
  /** Their pool: the only one that may serve {@code LOCAL_GPU_TYPES} (no token made over the API can be of it). */
  public static final String POOL = "local";

  private final AppConfig config;
  private final IntSupplier port;
  private final Map<String, Process> processes = new ConcurrentHashMap<>();
  /** Per type, how many times in a row its worker ended within {@link #QUICK_EXIT} of its start. */
  private final Map<String, Integer> quickExits = new ConcurrentHashMap<>();
  /** A worker that ends this soon after its start did not start; {@link #FAILING} such ends in a row: it cannot. */
  static final Duration QUICK_EXIT = Duration.ofSeconds(10);
  static final int FAILING = 3;
  private AgentSandbox sandbox;
  private Path home;
  private String token;
  private String tokenId;
  private volatile boolean stopping;

  /** {@code port}: the HTTP server's, known once it listens. */
  public LocalWorkersVerticle(AppConfig config, IntSupplier port) {
    this.config = config;
    this.port = port;
  }

  @Override
  public Future<?> start() {
    Path runsDir = config.database().dataDir().toAbsolutePath().resolve("runs");
    return vertx.executeBlocking(() -> {
      sandbox = AgentSandbox.prepare(config.agent(), runsDir, System.getenv());
      home = Files.createDirectories(runsDir.resolve("local-workers"));
      sandbox.handOver(home);
      return null;
    }, false).compose(v -> Bus.request(vertx.eventBus(), Addresses.STORE_TOKEN_REVOKE, new JsonObject()
            .put("user_id", TOKEN_USER).put("role", "worker"))) // an earlier instance's, killed before it revoked it
        .compose(v -> Bus.request(vertx.eventBus(), Addresses.STORE_TOKEN_CREATE, new JsonObject()
            .put("user_id", TOKEN_USER).put("role", "worker").put("created_by", "service").put("pool", POOL)
            .put("gpu_types", new io.vertx.core.json.JsonArray(List.copyOf(config.local().gpuTypes())))
            .put("trusted", true)))
        .compose(created -> {
          token = created.getString("token");
          tokenId = created.getString("id");
          return vertx.executeBlocking(() -> {
            config.local().gpuTypes().forEach(this::launch);
            return null;
          }, false);
        });
  }

  /** The worker's command line for a local type. */
  List<String> argv(String gpuType) {
    List<String> argv = new ArrayList<>(List.of(config.local().workerCommand().trim().split("\\s+")));
    String host = config.http().host();
    String reach = "0.0.0.0".equals(host) || "::".equals(host) ? "127.0.0.1" : host;
    // An IPv6 address goes in brackets (RFC 3986 3.2.2): http://::1:8080 has no host to a URL parser.
    String server = "http://" + (reach.contains(":") && !reach.startsWith("[") ? "[" + reach + "]" : reach) + ":"
        + port.getAsInt();
    // One job per slot: LOCAL_MAX_CONCURRENT jobs at once, as configured (a warm worker's default is two a GPU).
    argv.addAll(List.of("--server", server, "--gpu-type", gpuType, "--host", "local", "--gpus",
        IntStream.range(0, config.local().maxConcurrent()).mapToObj(String::valueOf).collect(Collectors.joining(",")),
        "--jobs-per-gpu", "1", "--parent-pid", String.valueOf(ProcessHandle.current().pid())));
    if (home != null) {
      // Their machine key: kept beside them, so that a worker started again proves it is this host's.
      argv.addAll(List.of("--identity", home.resolve("machine.key").toString()));
    }
    List<String> agent = config.agent().command();
    if (!String.join(" ", agent).equals(DEFAULT_AGENT)) {
      argv.addAll(List.of("--job-command", String.join(" ", agent.stream().map(ShellWords::quote).toList())));
    }
    return argv;
  }

  private void launch(String gpuType) {
    if (stopping) {
      return;
    }
    try {
      ProcessBuilder builder = new ProcessBuilder(sandbox.argv(argv(gpuType)))
          .directory(config.agent().workdir().toFile())
          .redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null")))
          .redirectErrorStream(true)
          .redirectOutput(ProcessBuilder.Redirect.appendTo(home.resolve(gpuType + ".log").toFile()));
      sandbox.apply(builder, home, "local-workers");
      builder.environment().remove("KERNEL_RUNNER_SUBMISSION_ID");
      builder.environment().put("KERNEL_RUNNER_WORKER_TOKEN", token);
      long started = System.nanoTime();
      Process process = builder.start();
      processes.put(gpuType, process);
      log.info("local worker for {} started (pid {}, {} slots)", gpuType, process.pid(),
          config.local().maxConcurrent());
      process.onExit().thenRun(() -> {
        if (!stopping) {
          exited(gpuType, process.exitValue(), Duration.ofNanos(System.nanoTime() - started));
        }
      });
    } catch (Exception e) {
      // As a worker that ended at once: tried again, and after FAILING such starts its type's queue is failed.
      log.error("local worker for {} did not start: {}", gpuType, e.toString());
      vertx.runOnContext(v -> exited(gpuType, -1, Duration.ZERO));
    }
  }

  /**
   * Starts a worker that ended again, after a pause that grows while it keeps ending at once (1 s, doubling to
   * 16 s). One that cannot start fails its type's queued submissions (ERROR) each time it ends, rather than leave
   * them waiting for a worker that is not coming, and the service's log gets the end of the worker's.
   */
  private void exited(String gpuType, int code, Duration ran) {
    Path logFile = home.resolve(gpuType + ".log");
    int quick;
    if (ran.compareTo(QUICK_EXIT) < 0) {
      quick = quickExits.merge(gpuType, 1, Integer::sum);
    } else {
      quickExits.remove(gpuType);
      quick = 0;
    }
    log.warn("local worker for {} exited ({}) after {} s: starting it again (see {})", gpuType, code,
        ran.toSeconds(), logFile);
    if (quick >= FAILING) {
      // The log's end is the operator's to read, not the submitters' (a worker's log names others' jobs).
      vertx.executeBlocking(() -> tail(logFile), false).onSuccess(tail -> log.error(
          "local worker for {} does not start; the end of {}:\n{}", gpuType, logFile, tail));
      vertx.eventBus().<Integer>request(Addresses.TRACKER_FAIL_QUEUED, new Queues.FailQueued(gpuType,
              "this host's worker for " + gpuType + " does not start (it ended " + quick
                  + " times in a row within seconds, last with code " + code + "): the service's log says why"))
          .onSuccess(reply -> log.error("local worker for {} does not start: {} queued submission(s) ended as ERROR",
              gpuType, reply.body()))
          .onFailure(error -> log.error("local worker for {} does not start: {}", gpuType, error.toString()));
    }
    long pause = 1000L << Math.min(4, Math.max(0, quick - 1));
    vertx.setTimer(pause, t -> vertx.executeBlocking(() -> {
      launch(gpuType);
      return null;
    }, false));
  }

  /** The worker log's last 4 KB (what it said before it ended; the log grows for as long as the service runs). */
  private static String tail(Path logFile) {
    try (java.io.RandomAccessFile file = new java.io.RandomAccessFile(logFile.toFile(), "r")) {
      byte[] end = new byte[(int) Math.min(4096, file.length())];
      file.seek(file.length() - end.length);
      file.readFully(end);
      return new String(end, java.nio.charset.StandardCharsets.UTF_8);
    } catch (java.io.IOException e) {
      return "";
    }
  }

  @Override
  public Future<?> stop() {
    stopping = true;
    return vertx.executeBlocking(() -> {
      // The worker stops its jobs itself: a job's process TERMed beside it could end, and its end be posted as
      // the job's own, before the worker knew it was stopping (the job is then re-queued by the next start).
      for (Process process : processes.values()) {
        ProcessTree.terminate(process.pid());
      }
      long deadline = System.nanoTime() + config.agent().killGrace().toNanos() + 2_000_000_000L;
      for (Process process : processes.values()) {
        while (process.isAlive() && System.nanoTime() < deadline) {
          Thread.sleep(50);
        }
        if (process.isAlive() || ProcessTree.groupAlive(process.pid())) {
          ProcessTree.signal(process.pid(), true);
        }
      }
      return null;
    }, false).compose(v -> tokenId == null ? Future.succeededFuture()
        : Bus.request(vertx.eventBus(), Addresses.STORE_TOKEN_REVOKE, new JsonObject().put("id", tokenId))
            .otherwise(error -> null));
  }

}
