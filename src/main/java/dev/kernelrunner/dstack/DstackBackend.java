package dev.kernelrunner.dstack;

import dev.kernelrunner.backend.AgentOutput;
import dev.kernelrunner.backend.Backend;
import dev.kernelrunner.backend.RunListener;
import dev.kernelrunner.bus.Addresses;
import dev.kernelrunner.bus.Bus;
import dev.kernelrunner.config.AppConfig;
import dev.kernelrunner.dstack.RunDecision.State;
import dev.kernelrunner.model.EventType;
import dev.kernelrunner.model.Mode;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Runs submissions as dstack tasks through the dstack server's HTTP API: per attempt a fresh run name, the payload
 * and the agent uploaded as file archives, {@code runs/apply} with a run spec made from the task template, then the
 * run is followed ({@code runs/get}, and {@code logs/poll} paged with {@code next_token} from just before the last
 * timestamp seen) so that the agent's signed events reach the client while it runs. What a run's state means is
 * decided by {@link RunDecision}; its log is cut into lines by {@link LogFollower}.
 */
public final class DstackBackend implements Backend {
  private static final Logger log = LoggerFactory.getLogger(DstackBackend.class);
  /** Job statuses before the container runs: there is no log to read yet (core/models/runs.py:61-70). */
  private static final Set<String> NO_LOG_YET = Set.of("submitted", "provisioning", "pulling");
  /** The longest wait between polls while the server does not answer. */
  private static final Duration MAX_POLL_BACKOFF = Duration.ofSeconds(30);
  /**
   * How long dstack's runner gives a stopped command between SIGINT and SIGKILL (killDelay, runner/internal/runner/
   * executor/executor.go:504-512).
   */
  static final Duration RUNNER_KILL_DELAY = Duration.ofSeconds(10);
  /** What a server with no readable log storage makes of every submission (DSTACK_LOG_STORAGE=none). */
  static final String LOG_STORAGE_NONE = "the dstack server's log storage serves no logs (DSTACK_LOG_STORAGE=none: "
      + "fluent-bit without Elasticsearch ships logs and reads none back, server/services/logs/fluentbit.py:207-216), "
      + "so the service could not see the agent's events and sends no submission there; give the dstack server file, "
      + "CloudWatch or Elasticsearch log storage and set DSTACK_LOG_STORAGE=auto";

  private final Vertx vertx;
  private final AppConfig.Dstack settings;
  private final AppConfig.Amd amd;
  private final DstackApi api;
  private final Path runsDir;
  private final JsonObject taskTemplate;
  private final int logTailLines;
  private final RunNames names;

  private DstackBackend(Vertx vertx, AppConfig config, DstackApi api, Path runsDir, JsonObject taskTemplate) {
    this.vertx = vertx;
    this.settings = config.dstack();
    this.amd = config.amd();
    this.api = api;
    this.runsDir = runsDir;
    this.taskTemplate = taskTemplate;
    this.logTailLines = config.agent().logTailLines();
    this.names = new RunNames(settings.runPrefix(), new SecureRandom());
  }

  /**
   * Reads the task template (a broken one stops the service from starting: it is the operator's file). Without a
   * configured server ({@code api} null) every start fails with the reason.
   */
  public static Future<Backend> create(Vertx vertx, AppConfig config, DstackApi api, Path runsDir) {
    return vertx.executeBlocking(() -> Templates.load(config.dstack().taskTemplate()), false)
        .map(template -> new DstackBackend(vertx, config, api, runsDir, template));
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
    if (api == null) {
      return Future.failedFuture("dstack is not configured: set DSTACK_SERVER_URL, DSTACK_TOKEN and DSTACK_PROJECT "
          + "(or run `dstack project add`)");
    }
    if (AppConfig.Dstack.NO_LOG_STORAGE.equals(settings.logStorage())) {
      return Future.failedFuture(LOG_STORAGE_NONE);
    }
    String id = payload.getString("submission_id");
    // A profile report travels in the run's log, which dstack caps per job and hour (see the README): the agent
    // sends none larger than this, and the pieces of one that is are not let through.
    payload.put("report_limit_bytes", settings.profileReportMaxBytes());
    DstackRun run = new DstackRun(id, Mode.parse(payload.getString("mode")).orElse(Mode.BENCHMARK),
        AgentOutput.EventKey.of(payload.getString("event_key")), listener, LogFollower.Position.START, 0);
    run.payload = payload.encode().getBytes(StandardCharsets.UTF_8);
    run.submitAttempt();
    return Future.succeededFuture(run);
  }

  @Override
  public Future<RunHandle> attach(Resume resume, RunListener listener) {
    if (api == null || resume.eventKey() == null) {
      return Future.failedFuture(api == null ? "dstack is not configured" : "the run's event key was not stored");
    }
    DstackRun run = new DstackRun(resume.submissionId(), resume.mode(), AgentOutput.EventKey.of(resume.eventKey()),
        listener, LogFollower.Position.decode(resume.position()), resume.lines());
    run.runName = resume.runName();
    run.agentStarted = resume.lines() > 0;
    run.state = State.FOLLOWING;
    return api.getRun(resume.runName()).map(snapshot -> {
      run.pollSoon(0);
      return run;
    });
  }

  @Override
  public Future<Integer> sweep(Set<String> live) {
    if (api == null) {
      return Future.succeededFuture(0);
    }
    return api.activeRuns().compose(runs -> {
      List<String> orphans = new ArrayList<>();
      for (RunSnapshot run : runs) {
        if (run.name() != null && names.isOurs(run.name()) && !run.isFinal() && !live.contains(run.name())) {
          log.warn("dstack run {} ({}) belongs to no live submission: stopping it", run.name(), run.status());
          orphans.add(run.name());
        }
      }
      return orphans.isEmpty() ? Future.succeededFuture(0)
          : api.stopRuns(orphans, false).map(v -> orphans.size());
    });
  }

  /** The run spec of one attempt (core/models/runs.py:543-620): the template's task, every value set as a value. */
  JsonObject runSpec(String submissionId, String runName, String payloadArchive, String agentArchive) {
    JsonObject task = Templates.task(taskTemplate, amd, runName,
        new JsonObject().put("KERNEL_RUNNER_SUBMISSION_ID", submissionId));
    return new JsonObject().put("run_name", runName).put("configuration", task)
        .put("file_archives", new JsonArray()
            .add(new JsonObject().put("id", payloadArchive).put("path", "payload.json"))
            .add(new JsonObject().put("id", agentArchive).put("path", "remote-agent")));
  }

  /** One submission on dstack, over all its attempts, until its last run is over. */
  private final class DstackRun implements RunHandle {
    private final String id;
    private final Mode mode;
    private final RunListener listener;
    private final AgentOutput.RunOutput output;
    private final long begun = System.nanoTime();
    private final List<Long> timers = new ArrayList<>();
    private LogFollower follower;
    private int lines;
    private int reportedLines = -1;
    private byte[] payload;
    private State state = State.SUBMITTING;
    private String runName;
    private int attempt;
    private RunSnapshot last;
    private Long runningSince;
    /** The provisioning clock (the job submitted or provisioning): time before {@link #stateSince}, and since. */
    private long waitedNanos;
    private String clockState;
    private long stateSince = System.nanoTime();
    private String lastProvisioning;
    private boolean agentStarted;
    private EventType heldType;
    private JsonObject heldFields;
    private LogFollower.Position heldStart;
    private int heldLines;
    /** Where the profile report's first piece began: the pieces are kept in memory only, so a restart reads them
     * again from there. */
    private LogFollower.Position piecesStart;
    private int piecesLines;
    private long heldAt;
    private boolean cancelled;
    private RunDecision.Limit limitHit;
    private boolean fleetChecked;
    private boolean detached;
    private long unreachableSince = -1;
    private int pollFailures;
    private long backoffMillis = settings.retryBackoff().toMillis();

    DstackRun(String id, Mode mode, AgentOutput.EventKey key, RunListener listener, LogFollower.Position from,
              int lines) {
      this.id = id;
      this.mode = mode;
      this.listener = listener;
      this.output = new AgentOutput.RunOutput(id, key, logTailLines);
      this.follower = new LogFollower(from);
      this.lines = lines;
    }

    private boolean over() {
      return state == State.DONE || detached;
    }

    // ---- submitting

    void submitAttempt() {
      state = State.SUBMITTING;
      attempt++;
      runName = names.next(id);
      follower = new LogFollower(LogFollower.Position.START);
      // Known before it exists, so that an orphan sweep never takes it for someone else's.
      listener.onRunName(runName);
      String name = runName;
      Bus.request(vertx.eventBus(), Addresses.FLEET_ENSURE, new JsonObject().put("gpu_type", amd.gpuType())
              .put("force", fleetChecked), settings.requestTimeout().multipliedBy(4))
          .recover(error -> Future.failedFuture("no fleet for " + amd.gpuType() + ": " + error.getMessage()))
          .compose(fleet -> vertx.executeBlocking(() -> new byte[][] {TarArchive.ofFile("payload.json", payload),
              TarArchive.ofFolder(settings.agentDir())}, false))
          .compose(archives -> api.archive(archives[0]).compose(payloadId -> api.archive(archives[1])
              .map(agentId -> runSpec(id, name, payloadId, agentId))))
          .compose(spec -> vertx.executeBlocking(() -> {
            // What was asked of dstack, for whoever looks into a run (the code is only in the payload archive).
            Path dir = Files.createDirectories(runsDir.resolve(id));
            Files.writeString(dir.resolve(name + ".run-spec.json"), spec.encodePrettily());
            return spec;
          }, false))
          .compose(spec -> cancelled ? Future.failedFuture("cancelled") : api.applyRun(spec))
          .onSuccess(snapshot -> {
            if (over()) {
              return;
            }
            log.info("submission {}: dstack run {} submitted (attempt {})", id, name, attempt);
            state = State.FOLLOWING;
            if (cancelled) {
              stopRun();
            }
            observe(snapshot);
          })
          .onFailure(error -> {
            if (over()) {
              return;
            }
            if (cancelled) {
              exit(null);
              return;
            }
            // An apply that timed out may still have submitted: make sure nothing runs on our account.
            if (error instanceof DstackError e && e.kind() == DstackError.Kind.UNREACHABLE) {
              stopEventually(name);
            }
            log.warn("submission {}: dstack run {} did not start: {}", id, name, error.getMessage());
            fail(EventType.ERROR, "dstack did not start the run: " + error.getMessage(), new JsonObject()
                .put("run_name", name).put("attempt", attempt));
          });
    }

    // ---- following

    void pollSoon(long delayMillis) {
      if (over()) {
        return;
      }
      if (delayMillis <= 0) {
        poll();
      } else {
        timers.add(vertx.setTimer(delayMillis, t -> poll()));
      }
    }

    private void poll() {
      if (over()) {
        return;
      }
      String name = runName;
      api.getRun(name)
          .compose(snapshot -> snapshot.jobSubmissionId() == null || NO_LOG_YET.contains(snapshot.jobStatus())
              ? Future.succeededFuture(snapshot)
              : drainLog(name, snapshot, follower.startTime(), null).map(snapshot))
          .onSuccess(snapshot -> {
            if (over() || !name.equals(runName)) {
              return;
            }
            pollFailures = 0;
            unreachableSince = -1;
            if (snapshot.isFinal()) {
              consume(follower.finish());
            }
            observe(snapshot);
          })
          .onFailure(error -> {
            if (over() || !name.equals(runName)) {
              return;
            }
            pollFailed(name, error);
          });
    }

    /** Every page of new log events from {@code startTime} (see {@link LogFollower}), paging on {@code next_token}. */
    private Future<Void> drainLog(String name, RunSnapshot snapshot, String startTime, String nextToken) {
      return api.pollLogs(name, snapshot.jobSubmissionId(), startTime, nextToken).compose(page -> {
        if (over() || !name.equals(runName)) {
          return Future.succeededFuture();
        }
        consume(follower.accept(page.getJsonArray("logs", new JsonArray())));
        String next = page.getString("next_token");
        return next == null ? Future.succeededFuture() : drainLog(name, snapshot, startTime, next);
      });
    }

    private void pollFailed(String name, Throwable error) {
      DstackError.Kind kind = error instanceof DstackError e ? e.kind() : DstackError.Kind.SERVER;
      switch (kind) {
        case NOT_FOUND -> fail(EventType.ERROR, "dstack no longer knows the run " + name, new JsonObject()
            .put("run_name", name).put("details", error.getMessage()));
        case FORBIDDEN, REJECTED -> {
          stopEventually(name);
          fail(EventType.ERROR, "dstack refused to report on the run: " + error.getMessage(),
              new JsonObject().put("run_name", name));
        }
        default -> {
          long now = System.nanoTime();
          if (unreachableSince < 0) {
            unreachableSince = now;
          }
          Duration away = Duration.ofNanos(now - unreachableSince);
          if (away.compareTo(settings.provisioningTimeout()) > 0) {
            stopEventually(name);
            fail(EventType.ERROR, "the dstack server did not answer for " + away.toSeconds() + " s: " + error.getMessage()
                + "; the run is stopped once it answers again", new JsonObject().put("run_name", name));
            return;
          }
          pollFailures++;
          long delay = Math.min(MAX_POLL_BACKOFF.toMillis(),
              settings.pollInterval().toMillis() << Math.min(pollFailures, 10));
          log.warn("submission {}: following dstack run {} failed ({} in a row), again in {} ms: {}", id, name,
              pollFailures, delay, error.getMessage());
          pollSoon(delay);
        }
      }
    }

    /** Whole lines of the log: signed events go to the client (a terminal one is held), the rest to the tail. */
    private void consume(List<LogFollower.Line> newLines) {
      for (LogFollower.Line line : newLines) {
        AgentOutput.Event event = output.accept(line.text());
        lines++;
        if (event == null) {
          continue;
        }
        agentStarted = true;
        if (withheld(event)) {
          continue;
        }
        if (event.type() == EventType.PROFILE_REPORT && piecesStart == null) {
          piecesStart = line.start();
          piecesLines = lines - 1;
        }
        if (event.type().isTerminal(mode) && heldType == null) {
          // Held until dstack reports the run final, so that the result carries what it cost.
          heldType = event.type();
          heldFields = event.fields();
          heldStart = line.start();
          heldLines = lines - 1;
          heldAt = System.nanoTime();
        } else if (heldType == null) {
          listener.onEvent(event.type(), event.fields());
        }
      }
      // A restart resumes after the events handed over, and before a held one (so that it is read again).
      // (The pieces come after every stored event of the run and before its terminal one.)
      int resumeLines = piecesStart != null ? piecesLines : heldType != null ? heldLines : lines;
      if (resumeLines != reportedLines && !newLines.isEmpty()) {
        reportedLines = resumeLines;
        LogFollower.Position at = piecesStart != null ? piecesStart
            : heldType != null ? heldStart : newLines.get(newLines.size() - 1).end();
        listener.onLogPosition(resumeLines, at.encode());
      }
    }

    /**
     * A report larger than {@code DSTACK_PROFILE_REPORT_MAX_MB}: its pieces are dropped (an agent that ignored
     * {@code report_limit_bytes}), and PROFILED says why it is not there.
     */
    private boolean withheld(AgentOutput.Event event) {
      Object size = event.fields().getValue(event.type() == EventType.PROFILED ? "report" : "size");
      if (event.type() == EventType.PROFILED && size instanceof JsonObject report) {
        size = report.getValue("size");
      }
      if (!(size instanceof Number bytes) || bytes.longValue() <= settings.profileReportMaxBytes()) {
        return false;
      }
      if (event.type() == EventType.PROFILE_REPORT) {
        return true;
      }
      if (event.type() == EventType.PROFILED) {
        event.fields().getJsonObject("report").put("withheld", "the report (" + bytes + " bytes) is larger than the "
            + settings.profileReportMaxBytes() + " bytes a run may send through dstack's log "
            + "(DSTACK_PROFILE_REPORT_MAX_MB; dstack kills a job whose log passes its per-job quota, 50 MiB an hour by "
            + "default): it was not sent");
      }
      return false;
    }

    /** Runs the provisioning, pull and running clocks from dstack's job status. */
    private void clocks(RunSnapshot snapshot) {
      long now = System.nanoTime();
      String status = snapshot.jobStatus();
      if (!Objects.equals(status, clockState)) {
        if (clockState == null || "submitted".equals(clockState) || "provisioning".equals(clockState)) {
          waitedNanos += now - stateSince;
        }
        clockState = status;
        stateSince = now;
      }
    }

    private void observe(RunSnapshot snapshot) {
      last = snapshot;
      clocks(snapshot);
      if (runningSince == null && (agentStarted || "running".equals(snapshot.status()))) {
        runningSince = System.nanoTime();
      }
      if (snapshot.isFinal()) {
        conclude(snapshot);
        return;
      }
      if (!agentStarted) {
        provisioning(snapshot, null);
      }
      if (RunDecision.whileRunning(facts(), settings.provisioningTimeout(), settings.stopGrace())
          instanceof RunDecision.Stop stop) {
        if (stop.limit() != null) {
          log.warn("submission {}: past the {} limit of {} s; stopping dstack run {}", id, stop.limit(),
              settings.provisioningTimeout().toSeconds(), runName);
          limitHit = stop.limit();
        }
        stopRun();
      }
      pollSoon(settings.pollInterval().toMillis());
    }

    /** PROVISIONING with what dstack says, each time that changes. */
    private void provisioning(RunSnapshot snapshot, JsonObject extra) {
      JsonObject fields = new JsonObject().put("backend", AppConfig.DSTACK_BACKEND)
          .put("dstack_status", snapshot.status()).put("job_status", snapshot.jobStatus())
          .put("status_message", snapshot.jobStatusMessage())
          .put("run_name", snapshot.name() != null ? snapshot.name() : runName).put("attempt", attempt)
          .put("dstack_backend", snapshot.backend()).put("instance", snapshot.instance())
          .put("price_per_hour", snapshot.price());
      if ("pulling".equals(snapshot.jobStatus()) && snapshot.imagePull() != null) {
        fields.put("image_pull", snapshot.imagePull());
      }
      if (extra != null) {
        fields.mergeIn(extra);
      }
      String key = fields.encode();
      if (!key.equals(lastProvisioning)) {
        lastProvisioning = key;
        listener.onEvent(EventType.PROVISIONING, fields);
      }
    }

    /** What is known of the run besides dstack's report, for {@link RunDecision}. */
    private RunDecision.Facts facts() {
      long now = System.nanoTime();
      boolean waiting = clockState == null || "submitted".equals(clockState) || "provisioning".equals(clockState);
      Duration waited = Duration.ofNanos(waitedNanos + (waiting ? now - stateSince : 0));
      Duration pulling = "pulling".equals(clockState) ? Duration.ofNanos(now - stateSince) : Duration.ZERO;
      Duration running = runningSince == null ? null : Duration.ofNanos(now - runningSince);
      Duration budget = settings.noCapacityRetry().compareTo(settings.provisioningTimeout()) < 0
          ? settings.noCapacityRetry() : settings.provisioningTimeout();
      Duration heldFor = heldType == null ? Duration.ZERO : Duration.ofNanos(now - heldAt);
      return new RunDecision.Facts(agentStarted, follower.anyEvent(), heldType != null, heldFor, cancelled, limitHit,
          fleetChecked, waited, pulling, running, budget.minus(Duration.ofNanos(now - begun)));
    }

    /** The run is final: do what {@link RunDecision} says. */
    private void conclude(RunSnapshot snapshot) {
      RunDecision.Facts facts = facts();
      JsonObject dstack = new JsonObject().put("run_name", snapshot.name()).put("dstack_status", snapshot.status())
          .put("status_message", snapshot.jobStatusMessage()).put("termination_reason", snapshot.terminationReason())
          .put("job_termination_reason", snapshot.jobTerminationReason())
          .put("job_message", snapshot.jobTerminationMessage()).put("exit_code", snapshot.exitStatus())
          .put("attempt", attempt);
      Double spent = cost(snapshot);
      if (spent != null) {
        dstack.put("cost_usd", Math.round(spent * 1_000_000) / 1_000_000.0);
      }
      RunDecision.Next next = RunDecision.whenFinal(snapshot, facts);
      if (next instanceof RunDecision.Deliver deliver) {
        JsonObject fields = heldFields.copy().put("dstack_run", snapshot.name());
        if (spent != null) {
          fields.put("cost_usd", dstack.getDouble("cost_usd"));
        }
        listener.onEvent(heldType, fields);
        heldType = null;
        listener.onLogPosition(lines, follower.position().encode());
        exit(deliver.exitCode());
      } else if (next instanceof RunDecision.Exit exit) {
        exit(exit.exitCode());
      } else if (next instanceof RunDecision.CheckFleetAndRetry check) {
        fleetChecked = true;
        provisioning(snapshot, new JsonObject().put("message", check.message()));
        submitAttempt();
      } else if (next instanceof RunDecision.Retry retry) {
        long delay = Math.max(1, Math.min(backoffMillis, facts.retryLeft().toMillis()));
        backoffMillis = Math.min(backoffMillis * 2, settings.retryBackoff().toMillis() * 8);
        provisioning(snapshot, new JsonObject().put("retry_in_seconds", delay / 1000.0).put("message",
            retry.message() + "; trying again in " + Math.max(1, Math.round(delay / 1000.0)) + " s"));
        state = State.WAITING_RETRY;
        timers.add(vertx.setTimer(delay, t -> {
          if (!over() && !cancelled) {
            submitAttempt();
          }
        }));
      } else if (next instanceof RunDecision.Fail failure) {
        if (limitHit != null) {
          dstack.put("phase", limitHit == RunDecision.Limit.PROVISIONING ? "provisioning"
                  : limitHit == RunDecision.Limit.PULL ? "image pull" : "first log line")
              .put("limit_seconds", settings.provisioningTimeout().toSeconds());
        }
        if (limitHit == RunDecision.Limit.NO_LOG || RunDecision.NO_LOG.equals(failure.message())) {
          dstack.put("setting", "DSTACK_LOG_STORAGE");
        }
        fail(failure.type(), failure.message(), dstack);
      }
    }

    private Double cost(RunSnapshot snapshot) {
      if (snapshot.cost() != null && snapshot.cost() > 0) {
        return snapshot.cost();
      }
      if (snapshot.price() != null && runningSince != null) {
        return snapshot.price() * (System.nanoTime() - runningSince) / 3.6e12;
      }
      return null;
    }

    // ---- stopping and ending

    /**
     * One {@code runs/stop}, over once dstack says the run is final. A cancel stops gracefully (the runner sends the
     * command SIGINT, then SIGKILL {@link #RUNNER_KILL_DELAY} later); a run past a limit, or whose agent has ended,
     * is aborted. Only one call: once the run's jobs are terminating, a later abort changes nothing
     * (server/background/pipeline_tasks/runs/__init__.py:64-65). A run still not final well after the kill delay
     * is left to dstack.
     */
    private void stopRun() {
      if (state != State.FOLLOWING) {
        return;
      }
      state = State.STOPPING;
      String name = runName;
      boolean abort = !cancelled;
      api.stopRuns(List.of(name), abort).onFailure(error -> log.warn("submission {}: stopping dstack run {} failed: "
          + "{}", id, name, error.getMessage()));
      Duration giveUp = settings.stopGrace().plus(RUNNER_KILL_DELAY).plus(settings.requestTimeout().multipliedBy(2))
          .plus(settings.pollInterval().multipliedBy(4));
      timers.add(vertx.setTimer(giveUp.toMillis(), t -> {
        if (!over()) {
          log.error("submission {}: dstack run {} still not final {} s after it was stopped; no longer following it",
              id, name, giveUp.toSeconds());
          stopEventually(name);
          if (cancelled) {
            exit(null);
          } else {
            fail(EventType.ERROR, "dstack had not ended the run " + giveUp.toSeconds() + " s after it was stopped",
                new JsonObject().put("run_name", name));
          }
        }
      }));
    }

    private void exit(Integer code) {
      if (end()) {
        listener.onExit(code, output.tail());
      }
    }

    private void fail(EventType type, String message, JsonObject fields) {
      if (end()) {
        listener.onFailed(type, fields.copy().put("message", message), output.tail());
      }
    }

    private boolean end() {
      if (state == State.DONE) {
        return false;
      }
      state = State.DONE;
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
      if (over() || cancelled) {
        return;
      }
      cancelled = true;
      switch (state) {
        case WAITING_RETRY -> exit(null);
        case FOLLOWING -> stopRun();
        default -> {
          // SUBMITTING: the attempt stops itself once apply answers; STOPPING: on its way already.
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

  /**
   * Stops a run we no longer follow (it failed to start, or the server was away), asking again with a backoff until
   * the server takes it: nothing may stay billed. The orphan sweep at the next start is the second net.
   */
  private void stopEventually(String runName) {
    stopEventually(runName, 0);
  }

  private void stopEventually(String runName, int tries) {
    api.stopRuns(List.of(runName), true).onFailure(error -> {
      if (error instanceof DstackError e && e.kind() == DstackError.Kind.NOT_FOUND) {
        return;
      }
      if (tries >= 60) {
        log.error("could not stop dstack run {} after {} tries; stop it by hand: {}", runName, tries,
            error.getMessage());
        return;
      }
      long delay = Math.min(MAX_POLL_BACKOFF.toMillis(), settings.retryBackoff().toMillis() << Math.min(tries, 6));
      vertx.setTimer(Math.max(1, delay), t -> stopEventually(runName, tries + 1));
    });
  }
}
