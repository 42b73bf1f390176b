package dev.kernelrunner.dstack;

import dev.kernelrunner.bus.Addresses;
import dev.kernelrunner.bus.Bus;
import dev.kernelrunner.config.AppConfig;
import dev.kernelrunner.dstack.DstackCli.NotFound;
import dev.kernelrunner.dstack.DstackOutput.RunState;
import dev.kernelrunner.model.EventType;
import dev.kernelrunner.model.Mode;
import dev.kernelrunner.supervisor.AgentOutput;
import dev.kernelrunner.supervisor.Backend;
import dev.kernelrunner.supervisor.RunListener;
import io.micrometer.core.instrument.MeterRegistry;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Runs submissions as dstack tasks: per attempt a fresh run name, a task configuration written from the
 * template with the payload and the agent as {@code files:}, {@code apply -d}, then the run is followed by
 * polling its state and its log (new lines only) so that the agent's events reach the client while it runs.
 */
public final class DstackBackend implements Backend {
  private static final Logger log = LoggerFactory.getLogger(DstackBackend.class);
  private static final Set<String> WAITING_STATUSES = Set.of("pending", "submitted", "provisioning");
  private static final Set<String> NO_CAPACITY_MESSAGES = Set.of("no offers", "no capacity");
  private static final Set<String> NO_CAPACITY_REASONS = Set.of("failed_to_start_due_to_no_capacity",
      "interrupted_by_no_capacity", "waiting_instance_limit_exceeded");
  /** Consecutive failed CLI polls after which the run is given up (and stopped). */
  private static final int MAX_POLL_FAILURES = 5;
  private static final String ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789";

  private final Vertx vertx;
  private final AppConfig.Dstack settings;
  private final AppConfig.Amd amd;
  private final DstackCli cli;
  private final Path runsDir;
  private final JsonObject taskTemplate;
  private final int logTailLines;
  private final SecureRandom random = new SecureRandom();

  private DstackBackend(Vertx vertx, AppConfig config, DstackCli cli, Path runsDir, JsonObject taskTemplate) {
    this.vertx = vertx;
    this.settings = config.dstack();
    this.amd = config.amd();
    this.cli = cli;
    this.runsDir = runsDir;
    this.taskTemplate = taskTemplate;
    this.logTailLines = config.agent().logTailLines();
  }

  /** Reads the task template (a broken one stops the service from starting: it is the operator's file). */
  public static Future<Backend> create(Vertx vertx, AppConfig config, Path runsDir, MeterRegistry meters) {
    DstackCli cli = DstackCli.create(vertx, config.dstack(), meters);
    return vertx.executeBlocking(() -> Templates.load(config.dstack().taskTemplate()), false)
        .map(template -> new DstackBackend(vertx, config, cli, runsDir, template));
  }

  @Override
  public String name() {
    return AppConfig.DSTACK_BACKEND;
  }

  @Override
  public boolean provisions() {
    return true;
  }

  @Override
  public Future<RunHandle> start(JsonObject payload, RunListener listener) {
    String id = payload.getString("submission_id");
    DstackRun run = new DstackRun(id, Mode.parse(payload.getString("mode")).orElse(Mode.BENCHMARK), listener);
    return vertx.executeBlocking(() -> {
      Path file = runDir(id).resolve("payload.json");
      Files.createDirectories(file.getParent());
      Files.writeString(file, payload.encode());
      Files.setPosixFilePermissions(file, PosixFilePermissions.fromString("rw-------"));
      return null;
    }, false).map(v -> {
      run.submitAttempt();
      return run;
    });
  }

  @Override
  public Future<RunHandle> attach(String submissionId, String runName, int logOffset, Mode mode,
                                  RunListener listener) {
    DstackRun run = new DstackRun(submissionId, mode, listener);
    run.runName = runName;
    run.logOffset = logOffset;
    run.agentStarted = logOffset > 0;
    run.phase = Phase.FOLLOWING;
    return cli.run(runName).map(state -> {
      run.pollSoon(0);
      return run;
    });
  }

  @Override
  public Future<Integer> sweep(Set<String> live) {
    return cli.runs().compose(runs -> {
      List<Future<?>> stops = new ArrayList<>();
      for (RunState state : runs) {
        String name = state.name();
        if (name != null && name.startsWith(settings.runPrefix()) && !state.isFinal() && !live.contains(name)) {
          log.warn("dstack run {} ({}) belongs to no live submission: stopping it", name, state.status());
          stops.add(cli.stop(name, false).onFailure(error ->
              log.warn("could not stop the orphan run {}: {}", name, error.getMessage())));
        }
      }
      return Future.join(stops).transform(ar -> Future.succeededFuture(stops.size()));
    });
  }

  private Path runDir(String id) {
    return runsDir.resolve(id);
  }

  /** A run name of the form {@code <prefix><submission id without dashes>-<4 random>}: unique per attempt. */
  private String newRunName(String id) {
    StringBuilder name = new StringBuilder(settings.runPrefix()).append(id.replace("-", "")).append('-');
    for (int i = 0; i < 4; i++) {
      name.append(ALPHABET.charAt(random.nextInt(ALPHABET.length())));
    }
    return name.toString();
  }

  /** The task configuration of one attempt, from the template; every value is set as a value. Blocking. */
  private Path writeTask(String id, String runName) throws java.io.IOException {
    Path dir = runDir(id);
    JsonObject task = taskTemplate.copy();
    task.put("type", "task").put("name", runName);
    task.put("files", new JsonArray()
        .add(new JsonObject().put("local_path", dir.resolve("payload.json").toAbsolutePath().toString())
            .put("path", "payload.json"))
        .add(new JsonObject().put("local_path", settings.agentDir().toAbsolutePath().toString())
            .put("path", "remote-agent")));
    JsonObject resources = task.getJsonObject("resources", new JsonObject());
    task.put("resources", resources.put("gpu", Templates.gpuSpec(amd.gpuType(), amd.gpuMemory())));
    task.put("fleets", new JsonArray().add(amd.fleetName()));
    task.put("spot_policy", amd.spotPolicy());
    Object env = task.getValue("env");
    JsonObject environment = env instanceof JsonObject object ? object : new JsonObject();
    task.put("env", environment.put("KERNEL_RUNNER_SUBMISSION_ID", id));
    if (!Files.isDirectory(settings.agentDir())) {
      throw new java.io.IOException("the agent folder " + settings.agentDir().toAbsolutePath()
          + " does not exist (DSTACK_AGENT_DIR)");
    }
    Path file = dir.resolve(runName + ".dstack.yml");
    Files.writeString(file, task.encodePrettily());
    return file;
  }

  private enum Phase { APPLYING, WAITING, FOLLOWING, DONE }

  /** One submission on dstack, over all its attempts, until its final run is over. */
  private final class DstackRun implements RunHandle {
    private final String id;
    private final Mode mode;
    private final RunListener listener;
    private final AgentOutput.LogTail tail = new AgentOutput.LogTail(logTailLines);
    private final long begun = System.nanoTime();
    private Phase phase = Phase.APPLYING;
    private String runName;
    private int attempt;
    private RunState last;
    private Long runningSince;
    private String lastProvisioning;
    private boolean agentStarted;
    private int logOffset;
    private int storedOffset = -1;
    private EventType heldType;
    private JsonObject heldFields;
    private int heldLine;
    private boolean killed;
    private boolean provisioningTimedOut;
    private boolean stopSent;
    private boolean detached;
    private boolean finished;
    private boolean forceFleet;
    private boolean fleetRetried;
    private int pollFailures;
    private long backoffMillis = settings.retryBackoff().toMillis();
    private final List<Long> timers = new ArrayList<>();

    DstackRun(String id, Mode mode, RunListener listener) {
      this.id = id;
      this.mode = mode;
      this.listener = listener;
    }

    // ---- submitting

    void submitAttempt() {
      phase = Phase.APPLYING;
      attempt++;
      runName = newRunName(id);
      // Known before it exists, so that an orphan sweep never takes it for someone else's.
      listener.onRunName(runName);
      String name = runName;
      Bus.request(vertx.eventBus(), Addresses.FLEET_ENSURE, new JsonObject().put("gpu_type", amd.gpuType())
              .put("force", forceFleet), settings.cliTimeout().multipliedBy(3))
          .recover(error -> Future.failedFuture(new DstackCli.DstackException(
              "no fleet for " + amd.gpuType() + ": " + error.getMessage())))
          .compose(fleet -> killed ? Future.failedFuture("cancelled")
              : vertx.executeBlocking(() -> writeTask(id, name), false))
          .compose(file -> killed ? Future.failedFuture("cancelled") : cli.apply(file))
          .compose(v -> cli.run(name).recover(error -> Future.failedFuture(error instanceof NotFound
              ? new DstackCli.DstackException("dstack printed no error but has no run named " + name
                  + ": it did not submit it")
              : error)))
          .onSuccess(state -> {
            if (finished || detached) {
              return;
            }
            log.info("submission {}: dstack run {} submitted (attempt {})", id, name, attempt);
            phase = Phase.FOLLOWING;
            if (killed) {
              stopRun();
            }
            observe(state);
          })
          .onFailure(error -> {
            if (finished || detached) {
              return;
            }
            // A timed-out apply may still have submitted: make sure nothing runs on our account.
            cli.stop(name, true).onFailure(ignored -> {});
            if (killed) {
              exit(null);
            } else {
              log.warn("submission {}: dstack run {} did not start: {}", id, name, error.getMessage());
              fail(EventType.ERROR, new JsonObject().put("message", "dstack did not start the run: "
                  + error.getMessage()).put("run_name", name).put("attempt", attempt));
            }
          });
    }

    // ---- following

    void pollSoon(long delayMillis) {
      if (finished || detached) {
        return;
      }
      if (delayMillis <= 0) {
        poll();
      } else {
        timers.add(vertx.setTimer(delayMillis, t -> poll()));
      }
    }

    private void poll() {
      if (finished || detached) {
        return;
      }
      String name = runName;
      cli.run(name).compose(state -> WAITING_STATUSES.contains(state.status())
              ? Future.succeededFuture(new Polled(state, null))
              : cli.logs(name).map(lines -> new Polled(state, lines))
                  .recover(error -> state.isFinal() ? Future.succeededFuture(new Polled(state, null))
                      : Future.failedFuture(error)))
          .onSuccess(polled -> {
            if (finished || detached || !name.equals(runName)) {
              return;
            }
            pollFailures = 0;
            if (polled.lines() != null) {
              consume(polled.lines());
            }
            observe(polled.state());
          })
          .onFailure(error -> {
            if (finished || detached) {
              return;
            }
            if (error instanceof NotFound) {
              fail(EventType.ERROR, new JsonObject().put("message", "dstack no longer knows the run " + name)
                  .put("details", error.getMessage()).put("run_name", name));
            } else if (++pollFailures >= MAX_POLL_FAILURES) {
              cli.stop(name, true).onFailure(ignored -> {});
              fail(EventType.ERROR, new JsonObject().put("message", "the dstack CLI failed " + pollFailures
                  + " times in a row while following the run: " + error.getMessage()).put("run_name", name));
            } else {
              log.warn("submission {}: polling dstack run {} failed ({} in a row): {}", id, name, pollFailures,
                  error.getMessage());
              pollSoon(settings.pollInterval().toMillis());
            }
          });
    }

    /** New log lines only: dstack logs prints the whole log each time (and may lose its tail on stop). */
    private void consume(List<String> lines) {
      for (int i = logOffset; i < lines.size(); i++) {
        String line = lines.get(i);
        var event = AgentOutput.parse(line);
        if (event.isEmpty()) {
          if (line.startsWith(AgentOutput.PREFIX)) {
            log.warn("submission {}: ignored a malformed event line", id);
          }
          tail.add(line);
          continue;
        }
        agentStarted = true;
        EventType type = event.get().type();
        if (type.isTerminal(mode) && heldType == null) {
          // Held until dstack reports the run final, so that the result carries what it cost.
          heldType = type;
          heldFields = event.get().fields();
          heldLine = i;
        } else {
          listener.onEvent(type, event.get().fields());
        }
      }
      logOffset = Math.max(logOffset, lines.size());
      int resumeAt = heldType != null ? heldLine : logOffset;
      if (resumeAt != storedOffset) {
        storedOffset = resumeAt;
        listener.onLogOffset(resumeAt);
      }
    }

    private void observe(RunState state) {
      last = state;
      if (runningSince == null && (agentStarted || "running".equals(state.status()))) {
        runningSince = System.nanoTime();
      }
      if (state.isFinal()) {
        conclude(state);
        return;
      }
      if (!agentStarted) {
        provisioning(state, null);
        Duration waited = Duration.ofNanos(System.nanoTime() - begun);
        if (waited.compareTo(settings.provisioningTimeout()) > 0 && !provisioningTimedOut && !killed) {
          log.warn("submission {}: no GPU within {} s; stopping dstack run {}", id,
              settings.provisioningTimeout().toSeconds(), runName);
          provisioningTimedOut = true;
          stopRun();
        }
      }
      pollSoon(settings.pollInterval().toMillis());
    }

    /** PROVISIONING with what dstack says, each time that changes. */
    private void provisioning(RunState state, JsonObject extra) {
      JsonObject fields = new JsonObject().put("backend", AppConfig.DSTACK_BACKEND)
          .put("dstack_status", state.status()).put("status_message", state.statusMessage())
          .put("run_name", state.name() != null ? state.name() : runName).put("attempt", attempt)
          .put("dstack_backend", state.backend()).put("instance", state.instance())
          .put("price_per_hour", state.price());
      if (extra != null) {
        fields.mergeIn(extra);
      }
      String key = fields.encode();
      if (!key.equals(lastProvisioning)) {
        lastProvisioning = key;
        listener.onEvent(EventType.PROVISIONING, fields);
      }
    }

    /** The run is final: deliver the held result, retry a run that found no capacity, or say how it failed. */
    private void conclude(RunState state) {
      phase = Phase.DONE;
      if (heldType != null) {
        JsonObject fields = heldFields.copy();
        Double cost = cost(state);
        if (cost != null) {
          fields.put("cost_usd", Math.round(cost * 1_000_000) / 1_000_000.0);
        }
        fields.put("dstack_run", state.name());
        listener.onEvent(heldType, fields);
        heldType = null;
        listener.onLogOffset(logOffset);
        exit(state.exitStatus());
        return;
      }
      if (killed) {
        exit(null);
        return;
      }
      JsonObject dstack = new JsonObject().put("run_name", state.name()).put("dstack_status", state.status())
          .put("status_message", state.statusMessage()).put("termination_reason", state.terminationReason())
          .put("job_termination_reason", state.jobTerminationReason()).put("job_message", state.jobMessage());
      Double spent = cost(state);
      if (spent != null) {
        dstack.put("cost_usd", Math.round(spent * 1_000_000) / 1_000_000.0);
      }
      Duration waited = Duration.ofNanos(System.nanoTime() - begun);
      if (provisioningTimedOut) {
        long limit = settings.provisioningTimeout().toSeconds();
        fail(EventType.TIME_LIMIT_EXCEEDED, dstack.put("phase", "provisioning").put("limit_seconds", limit)
            .put("message", "no GPU was ready within the provisioning limit of " + limit + " s; the run was stopped"));
        return;
      }
      // "no fleets" comes with a no-capacity reason: the fleet is checked (and made) once, then it is capacity.
      if (!agentStarted && !fleetRetried && noFleets(state)) {
        fleetRetried = true;
        forceFleet = true;
        provisioning(state, new JsonObject().put("message", "dstack found no fleet; checking the fleet and trying again"));
        submitAttempt();
        return;
      }
      if (!agentStarted && noCapacity(state)) {
        Duration left = min(settings.noCapacityRetry(), settings.provisioningTimeout()).minus(waited);
        if (left.toMillis() > 0) {
          long delay = Math.min(backoffMillis, left.toMillis());
          backoffMillis = Math.min(backoffMillis * 2, settings.retryBackoff().toMillis() * 8);
          provisioning(state, new JsonObject().put("retry_in_seconds", delay / 1000.0)
              .put("message", "no " + amd.gpuType() + " capacity on dstack (" + state.statusMessage()
                  + "); trying again in " + Math.max(1, Math.round(delay / 1000.0)) + " s"));
          phase = Phase.WAITING;
          timers.add(vertx.setTimer(Math.max(1, delay), t -> {
            if (!finished && !detached && !killed) {
              submitAttempt();
            }
          }));
          return;
        }
        fail(EventType.ERROR, dstack.put("attempts", attempt).put("message", "no " + amd.gpuType()
            + " capacity on dstack: " + attempt + " attempt(s) over " + waited.toSeconds() + " s found none"));
        return;
      }
      Integer exit = state.exitStatus();
      if ((exit != null && exit != 0) || "container_exited_with_error".equals(state.jobTerminationReason())) {
        fail(EventType.RUNTIME_ERROR, dstack.put("exit_code", exit).put("message", "the container exited with code "
            + exit + " before the agent reported a result"));
        return;
      }
      if ("done".equals(state.status())) {
        exit(0);
        return;
      }
      fail(EventType.ERROR, dstack.put("message", "dstack ended the run: " + describe(state)));
    }

    private Double cost(RunState state) {
      if (state.cost() != null && state.cost() > 0) {
        return state.cost();
      }
      if (state.price() != null && runningSince != null) {
        return state.price() * (System.nanoTime() - runningSince) / 3.6e12;
      }
      return null;
    }

    // ---- stopping and ending

    /** {@code stop -y}, then {@code -x} after the grace period; the run ends when dstack says it is final. */
    private void stopRun() {
      if (phase != Phase.FOLLOWING || stopSent) {
        return;
      }
      stopSent = true;
      String name = runName;
      cli.stop(name, false).onFailure(error -> log.warn("submission {}: dstack stop {} failed: {}", id, name,
          error.getMessage()));
      timers.add(vertx.setTimer(Math.max(1, settings.stopGrace().toMillis()), t -> {
        if (!finished && !detached) {
          log.warn("submission {}: dstack run {} still not final {} s after stop: aborting it", id, name,
              settings.stopGrace().toSeconds());
          cli.stop(name, true).onFailure(error -> log.warn("submission {}: dstack stop -x {} failed: {}", id, name,
              error.getMessage()));
        }
      }));
      long giveUp = settings.stopGrace().plus(settings.cliTimeout().multipliedBy(2)).toMillis();
      timers.add(vertx.setTimer(giveUp, t -> {
        if (!finished && !detached) {
          log.error("submission {}: dstack run {} did not end after stop and abort; no longer following it", id,
              name);
          if (killed) {
            exit(null);
          } else {
            fail(EventType.ERROR, new JsonObject().put("run_name", name)
                .put("message", "dstack did not end the run after stop and abort"));
          }
        }
      }));
    }

    private void exit(Integer code) {
      if (end()) {
        listener.onExit(code, tail.lines());
      }
    }

    private void fail(EventType type, JsonObject fields) {
      if (end()) {
        listener.onFailed(type, fields, tail.lines());
      }
    }

    private boolean end() {
      if (finished) {
        return false;
      }
      finished = true;
      phase = Phase.DONE;
      timers.forEach(vertx::cancelTimer);
      return true;
    }

    @Override
    public Long pid() {
      return null;
    }

    @Override
    public String node() {
      return last != null && last.instance() != null ? last.instance() : "dstack:" + amd.fleetName();
    }

    @Override
    public String runName() {
      return runName;
    }

    @Override
    public void kill() {
      if (finished || killed) {
        return;
      }
      killed = true;
      switch (phase) {
        case WAITING -> exit(null);
        case FOLLOWING -> stopRun();
        default -> {
          // APPLYING: the attempt stops itself once apply returns
        }
      }
    }

    @Override
    public boolean survivesRestart() {
      return true;
    }

    @Override
    public void detach() {
      detached = true;
      timers.forEach(vertx::cancelTimer);
    }
  }

  private record Polled(RunState state, List<String> lines) {}

  private static boolean noCapacity(RunState state) {
    return NO_CAPACITY_MESSAGES.contains(state.statusMessage())
        || NO_CAPACITY_REASONS.contains(state.jobTerminationReason());
  }

  private static boolean noFleets(RunState state) {
    return "no fleets".equals(state.statusMessage())
        || (state.jobMessage() != null && state.jobMessage().toLowerCase().contains("no fleets"));
  }

  private static String describe(RunState state) {
    List<String> parts = new ArrayList<>();
    for (String part : new String[] {state.statusMessage(), state.terminationReason(), state.jobTerminationReason(),
        state.jobMessage()}) {
      if (part != null && !part.isBlank() && !parts.contains(part)) {
        parts.add(part);
      }
    }
    return parts.isEmpty() ? state.status() : String.join("; ", parts);
  }

  private static Duration min(Duration a, Duration b) {
    return a.compareTo(b) <= 0 ? a : b;
  }
}
