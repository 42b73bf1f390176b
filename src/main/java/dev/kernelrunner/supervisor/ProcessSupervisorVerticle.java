package dev.kernelrunner.supervisor;

import dev.kernelrunner.bus.Addresses;
import dev.kernelrunner.bus.Bus;
import dev.kernelrunner.bus.Failures;
import dev.kernelrunner.config.AppConfig;
import dev.kernelrunner.leaderboard.Board;
import dev.kernelrunner.leaderboard.BoardJson;
import dev.kernelrunner.backend.AgentOutput;
import dev.kernelrunner.backend.AgentPayload;
import dev.kernelrunner.backend.Backend;
import dev.kernelrunner.backend.RunListener;
import dev.kernelrunner.backend.RunOrder;
import dev.kernelrunner.model.EventType;
import dev.kernelrunner.model.Mode;
import dev.kernelrunner.model.ProfileReport;
import dev.kernelrunner.model.Progress;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.VerticleBase;
import io.vertx.core.eventbus.DeliveryOptions;
import io.vertx.core.eventbus.EventBus;
import io.vertx.core.json.JsonObject;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Owns the child processes that run submissions: starts them through the backend of their GPU type, turns
 * what they print into {@code submissions.progress}, enforces the time limit, kills on request.
 */
public class ProcessSupervisorVerticle extends VerticleBase {
  private static final Logger log = LoggerFactory.getLogger(ProcessSupervisorVerticle.class);
  /** How long a kill for a run not started yet is remembered, so the start is refused. */
  private static final Duration KILL_MEMORY = Duration.ofMinutes(2);

  private final AppConfig config;
  private final Map<String, Run> runs = new HashMap<>();
  private final Map<String, Long> killedBeforeStart = new HashMap<>();
  private final Map<String, Backend> backends;
  private EventBus bus;
  private boolean stopping;

  /** {@code backends} by name; the local one is made here, since it runs this verticle's child processes. */
  public ProcessSupervisorVerticle(AppConfig config, Map<String, Backend> backends) {
    this.config = config;
    this.backends = new HashMap<>(backends);
  }

  @Override
  public Future<?> start() {
    bus = vertx.eventBus();
    Path runsDir = config.database().dataDir().toAbsolutePath().resolve("runs");
    return vertx.executeBlocking(() -> {
      Files.createDirectories(runsDir);
      AgentSandbox sandbox = AgentSandbox.prepare(config.agent(), runsDir, System.getenv());
      String host = System.getenv("HOSTNAME");
      String node = host != null && !host.isBlank() ? host : Files.readString(Path.of("/etc/hostname")).trim();
      return new LocalBackend(vertx, config.agent(), runsDir, node, sandbox);
    }).compose(local -> {
      backends.put(AppConfig.LOCAL_BACKEND, local);
      pruneRuns(runsDir);
      vertx.setPeriodic(Duration.ofHours(1).toMillis(), t -> pruneRuns(runsDir));
      return Future.all(List.of(
          Bus.serve(bus, Addresses.SUPERVISOR_START, this::startRequested, log),
          Bus.serve(bus, Addresses.SUPERVISOR_ATTACH, this::attach, log),
          Bus.serve(bus, Addresses.SUPERVISOR_KILL, this::kill, log),
          Bus.serve(bus, Addresses.SUPERVISOR_REAP, this::reap, log),
          Bus.serve(bus, Addresses.SUPERVISOR_SWEEP, this::sweep, log)));
    });
  }

  @Override
  public Future<?> stop() {
    // The service is going away: its agents go too (the next start re-queues their submissions).
    // Runs that outlive the service (dstack) are only let go: the next start follows them again. Local agents
    // are stopped, and the service waits for them to be gone (TERM, then KILL after the grace period).
    stopping = true;
    List<Future<String>> gone = new java.util.ArrayList<>();
    runs.values().forEach(run -> {
      if (run.handle != null && run.handle.survivesRestart()) {
        run.handle.detach();
      } else if (run.handle != null) {
        run.handle.kill();
        gone.add(run.gone.future());
      }
    });
    long waitMillis = config.agent().killGrace().toMillis() + 5000;
    return Future.join(gone).timeout(waitMillis, java.util.concurrent.TimeUnit.MILLISECONDS)
        .otherwise(error -> {
          log.warn("{} agent(s) were still going {} ms after the service asked them to stop", gone.stream()
              .filter(f -> !f.isComplete()).count(), waitMillis);
          return null;
        });
  }

  private void pruneRuns(Path runsDir) {
    Set<String> live = Set.copyOf(runs.keySet());
    vertx.executeBlocking(() -> RunsDirectory.prune(runsDir, config.agent().runsRetention(), live), false)
        .onSuccess(removed -> {
          if (removed > 0) {
            log.info("removed {} run folder(s) older than {} h", removed, config.agent().runsRetention().toHours());
          }
        });
  }

  /** Accepts at once; how the start went arrives as progress (events, then an exit). */
  private Future<Boolean> startRequested(RunOrder.Start order) {
    startRun(order.submissionId(), order.backend()); // here, not later: its log lines carry the submission id
    return Future.succeededFuture(true);
  }

  private void startRun(String id, String backendName) {
    log.info("starting submission {} on the {} backend", id, backendName);
    Backend backend = backends.get(backendName);
    Run run = new Run(id, backend != null && backend.provisions());
    runs.put(id, run);
    if (backend == null) {
      finish(run, new Progress.NotStarted("no backend '" + backendName + "' in this build"), List.of());
      return;
    }
    if (killedBeforeStart.remove(id) != null) {
      run.stop = new Progress.Killed();
      finish(run, run.stop, List.of());
      return;
    }
    long deadline = System.nanoTime() + config.database().eventWriteRetry().toNanos();
    submissionForRun(run, deadline, 250)
        .compose(submission -> {
          run.mode = Mode.parse(submission.getString("mode")).orElse(Mode.BENCHMARK);
          if (run.stop != null) {
            return Future.failedFuture(new IllegalStateException("cancelled before start"));
          }
          return board(submission).compose(board -> backend.start(payload(submission, run, board), listener(run)));
        })
        .onSuccess(handle -> started(run, handle, backendName))
        .onFailure(error -> finish(run, new Progress.NotStarted(error.getMessage()), List.of()));
  }

  /**
   * The submission as its run needs it (the code, the payload's fields). While the database is away the read is
   * tried again, with a growing pause, for as long as the tracker holds events ({@code DATABASE_EVENT_WRITE_RETRY}):
   * a blip at dispatch is not the submission's end.
   */
  private Future<JsonObject> submissionForRun(Run run, long deadline, long pauseMillis) {
    return Bus.request(bus, Addresses.STORE_SUBMISSION_GET, new JsonObject().put("id", run.id).put("include_code", true))
        .recover(error -> {
          if (Failures.code(error) != Failures.UNAVAILABLE || run.stop != null || System.nanoTime() > deadline) {
            return Future.failedFuture(error);
          }
          return vertx.timer(pauseMillis).compose(v -> submissionForRun(run, deadline, Math.min(pauseMillis * 2, 5000)));
        });
  }

  /** Follows again a run an earlier instance of the service started (it went on while we were down). */
  private Future<Boolean> attach(RunOrder.Attach order) {
    Backend.Resume resume = order.resume();
    String id = resume.submissionId();
    String backendName = order.backend();
    Backend backend = backends.get(backendName);
    if (backend == null) {
      return Future.failedFuture(new Failures.CodedException(Failures.BAD_REQUEST,
          "no backend '" + backendName + "' in this build"));
    }
    Run run = new Run(id, backend.provisions());
    run.mode = resume.mode();
    run.runName = resume.runName();
    run.eventKey = resume.eventKey();
    runs.put(id, run);
    log.info("following {} run {} of {} again (from log line {})", backendName, run.runName, id, resume.lines());
    // Answered once the backend follows the run (or has said, as this run's end, why it cannot): a worker naming
    // its job right after the start then finds the job held for its holder, not unknown.
    return backend.attach(resume, listener(run))
        .onSuccess(handle -> {
          started(run, handle, backendName);
          if (resume.lines() > 0) {
            armTimeLimit(run);
          }
        })
        .onFailure(error -> finish(run, new Progress.Failed(EventType.ERROR, new JsonObject()
            .put("message", "the service restarted and could not follow this run again")
            .put("details", error.getMessage())), List.of()))
        .transform(ar -> Future.succeededFuture(true));
  }

  private Future<Integer> sweep(RunOrder.Sweep order) {
    Backend backend = backends.get(order.backend());
    if (backend == null) {
      return Future.succeededFuture(0);
    }
    Set<String> live = new java.util.HashSet<>();
    runs.values().forEach(run -> {
      if (run.runName != null) {
        live.add(run.runName);
      }
    });
    return backend.sweep(live);
  }

  /**
   * The board's best candidates read for its #1: the first that has an interval (Board leaves out one whose
   * samples do not give its figures); where none of them has, the run is audited as an empty board's first.
   */
  private static final int BOARD_TOP = 20;

  /** How long a run's start waits for its board before it asks for the audit instead. */
  private static final DeliveryOptions BOARD_READ = new DeliveryOptions().setSendTimeout(5_000);

  /** What the agent gets, with a fresh secret key for signing its events (see {@link AgentOutput}). */
  private JsonObject payload(JsonObject submission, Run run, AgentPayload.Board board) {
    run.eventKey = AgentOutput.EventKey.random().base64();
    return AgentPayload.of(config.agent(), submission.getString("id"), submission.getString("problem"),
        submission.getString("language"), submission.getString("dtype"), submission.getString("code"),
        submission.getString("mode"), submission.getString("gpu_type"), run.eventKey, board);
  }

  /**
   * A benchmark's board as it stands, ranked as its readers see it (Board): the low end of its #1's interval, below
   * which the agent audits a result, a new #1; null for other modes; where the store does not answer,
   * {@link AgentPayload.Board#unread}: the run's replayed result is audited whatever it is.
   */
  private Future<AgentPayload.Board> board(JsonObject submission) {
    if (Mode.parse(submission.getString("mode")).orElse(Mode.BENCHMARK) != Mode.BENCHMARK) {
      return Future.succeededFuture(null);
    }
    JsonObject which = new JsonObject().put("problem", submission.getString("problem"))
        .put("gpu_type", submission.getString("gpu_type")).put("dtype", submission.getString("dtype"))
        .put("limit", BOARD_TOP);
    return vertx.eventBus().<JsonObject>request(Addresses.STORE_LEADERBOARD, which, BOARD_READ)
        .map(reply -> {
          List<Board.Candidate> candidates = new java.util.ArrayList<>();
          reply.body().getJsonArray("rows").forEach(row -> candidates.add(BoardJson.candidate((JsonObject) row)));
          List<Board.Entry> ranked = Board.rank(candidates);
          return AgentPayload.Board.newBestBelow(ranked.isEmpty() ? null : ranked.get(0).interval().lowMs());
        })
        .otherwise(error -> {
          log.warn("the board of {} could not be read ({}): its result will be audited", submission.getString("id"),
              error.getMessage());
          return AgentPayload.Board.unread();
        });
  }

  private void started(Run run, Backend.RunHandle handle, String backend) {
    run.handle = handle;
    run.backend = backend;
    if (run.stop != null) {
      handle.kill();
    }
    if (!run.provisions) {
      armTimeLimit(run);
    }
    register(run).onComplete(ar -> run.registered.tryComplete());
  }

  /** The time limit covers the agent's work; a backend that provisions bounds its wait for a machine itself. */
  private void armTimeLimit(Run run) {
    if (run.timer != -1 || run.finished) {
      return;
    }
    run.timer = vertx.setTimer(config.agent().submissionTimeout().toMillis(), t -> {
      log.warn("submission {} ran past its time limit; killing it", run.id);
      run.stop = new Progress.TimedOut();
      if (run.handle != null) {
        run.handle.kill();
      }
    });
  }

  private Future<Void> register(Run run) {
    Backend.RunHandle handle = run.handle;
    return Bus.request(bus, Addresses.REGISTRY_REGISTER, new JsonObject().put("submission_id", run.id)
            .put("backend", run.backend).put("pid", handle.pid()).put("node", handle.node())
            .put("run_name", handle.runName())
            // Kept only for a run that outlives the service: the next start checks its events with it.
            .put("event_key", handle.survivesRestart() ? run.eventKey : null))
        .onFailure(error -> log.warn("could not register {}: {}", run.id, error.toString()))
        .mapEmpty();
  }

  private RunListener listener(Run run) {
    return new RunListener() {
      @Override
      public void onEvent(EventType type, JsonObject fields) {
        if (type != EventType.PROVISIONING) {
          armTimeLimit(run);
        }
        if (type == EventType.PROFILE_REPORT) {
          run.report.add(fields); // kept beside the submission, not as an event
          return;
        }
        if (type == EventType.PROFILED) {
          // The report is stored before the event that says so: a client that sees PROFILED can download it.
          run.afterReport = storeReport(run, fields);
        }
        run.afterReport.onComplete(ar -> forward(run, type, fields));
      }

      @Override
      public void onExit(Integer exitCode, List<String> logTail) {
        finish(run, new Progress.Exited(exitCode), logTail);
      }

      @Override
      public void onFailed(EventType type, JsonObject fields, List<String> logTail) {
        finish(run, new Progress.Failed(type, fields), logTail);
      }

      @Override
      public void onLost(String reason, List<String> logTail) {
        finish(run, new Progress.Lost(reason), logTail);
      }

      @Override
      public Future<Void> onRunName(String runName) {
        run.runName = runName;
        // Before the backend's handle is here, the first registration stores the name (it asks the handle).
        return run.handle != null ? register(run).recover(error -> Future.succeededFuture())
            : run.registered.future();
      }

      @Override
      public void onLogPosition(int lines, String position) {
        // Stored once the events before it are: a restart resumes after them, never before.
        Future<?> after = run.lastEvent;
        run.logPosition.offer(() -> after.transform(ar -> Bus.request(bus, Addresses.STORE_SUBMISSION_SET_LOG_OFFSET,
                new JsonObject().put("submission_id", run.id).put("log_offset", lines).put("log_position", position))
            .onFailure(error -> log.warn("could not store the log offset of {}: {}", run.id, error.toString()))));
      }
    };
  }

  private void forward(Run run, EventType type, JsonObject fields) {
    // Encoded here, on the supervisor's thread, so that the tracker and the store do not have to.
    Progress.Event event = new Progress.Event(run.id, type, fields, fields.encode());
    // Answered once stored: while the database is away the tracker holds and retries it for up to
    // EVENT_WRITE_RETRY_SECONDS, so the wait is as long.
    run.lastEvent = bus.request(Addresses.SUBMISSIONS_PROGRESS, event, new DeliveryOptions()
            .setSendTimeout(config.database().eventWriteRetry().plusMinutes(1).toMillis()))
        .onFailure(error -> log.error("progress {} for {} was not taken: {}", type, run.id, error.toString()));
  }

  /**
   * Puts the run's report pieces together and stores them; {@code PROFILED}'s {@code report} then says whether it
   * was stored, and why not. Never fails: a profile without its file is still a result.
   */
  private Future<Void> storeReport(Run run, JsonObject fields) {
    Object value = fields.getValue("report");
    JsonObject declared = value instanceof JsonObject object ? object : null;
    ReportPieces.Outcome outcome = run.report.assemble(declared);
    JsonObject said = declared == null ? new JsonObject() : declared;
    fields.put("report", said);
    if (!outcome.whole()) {
      log.warn("submission {}: its profile report is not kept: {}", run.id, outcome.problem());
      said.put("stored", false).put("problem", outcome.problem());
      return Future.succeededFuture();
    }
    ProfileReport report = new ProfileReport(run.id, outcome.name(), outcome.sha256(), outcome.content());
    return bus.request(Addresses.STORE_PROFILE_PUT, report, new DeliveryOptions().setSendTimeout(60_000))
        .transform(ar -> {
          said.put("stored", ar.succeeded());
          if (ar.failed()) {
            log.warn("submission {}: its profile report could not be stored: {}", run.id, ar.cause().toString());
            said.put("problem", "the report could not be stored: " + ar.cause().getMessage());
          }
          return Future.<Void>succeededFuture();
        });
  }

  /**
   * Reports the end of a run, then answers whoever waits for it to be gone. A run stopped at the time limit timed
   * out, whatever its backend saw; one we killed was killed, unless its backend says it failed or was lost.
   */
  private void finish(Run run, Progress.Outcome seen, List<String> logTail) {
    if (run.finished) {
      return;
    }
    run.finished = true;
    vertx.cancelTimer(run.timer);
    runs.remove(run.id);
    if (run.handle != null) {
      bus.request(Addresses.REGISTRY_UNREGISTER, new JsonObject().put("submission_id", run.id))
          .onFailure(error -> {
            if (!stopping) {
              log.warn("could not unregister {}: {}", run.id, error.toString());
            }
          });
    }
    Progress.Outcome outcome = run.stop instanceof Progress.TimedOut ? run.stop
        : run.stop == null || seen instanceof Progress.Lost || seen instanceof Progress.Failed ? seen : run.stop;
    Progress.Exit exit = new Progress.Exit(run.id, outcome, logTail);
    // After the run's last event, which may still wait for its report to be stored.
    run.afterReport.compose(v -> bus.<String>request(Addresses.SUBMISSIONS_PROGRESS, exit))
        .onSuccess(reply -> run.gone.complete(reply.body()))
        .onFailure(error -> {
          if (stopping) {
            log.info("submission {} stopped with the service; it is re-queued at the next start", run.id);
          } else {
            log.error("exit of {} was not taken: {}", run.id, error.toString());
          }
          run.gone.complete(null);
        });
  }

  /** Kills a run and answers once its processes are gone and its end is stored. */
  private Future<RunOrder.Stopped> kill(RunOrder.Kill order) {
    String id = order.submissionId();
    Run run = runs.get(id);
    if (run == null) {
      killedBeforeStart.put(id, System.currentTimeMillis());
      killedBeforeStart.values().removeIf(at -> at < System.currentTimeMillis() - KILL_MEMORY.toMillis());
      return Future.succeededFuture(new RunOrder.Stopped(null, false));
    }
    if (run.stop == null) {
      run.stop = new Progress.Killed();
    }
    if (run.handle != null) {
      run.handle.kill();
    }
    return run.gone.future().map(status -> new RunOrder.Stopped(status, true));
  }

  private Future<Boolean> reap(RunOrder.Reap order) {
    String id = order.submissionId();
    long pid = order.pid();
    return vertx.executeBlocking(() -> ProcessTree.reapOrphan(pid, id, config.agent().killGrace().toMillis()), false)
        .map(killed -> {
          if (killed) {
            log.info("killed agent process {} left over from a previous run of {}", pid, id);
          }
          return killed;
        });
  }

  /** One run from the start request until its exit is stored. */
  private static final class Run {
    final String id;
    final Promise<String> gone = Promise.promise();
    final boolean provisions;
    Backend.RunHandle handle;
    String backend;
    /** The backend's name for the run, known from before it exists (so that no sweep takes it for an orphan). */
    String runName;
    /** The run's event key (base64); stored with a run that outlives the service, to check its events later. */
    String eventKey;
    Mode mode = Mode.BENCHMARK;
    /** Why we stopped it (a kill, the time limit), or null. */
    Progress.Outcome stop;
    boolean finished;
    long timer = -1;
    Future<?> lastEvent = Future.succeededFuture();
    /** Done once the run's first registration is stored (or has failed). */
    final Promise<Void> registered = Promise.promise();
    /** The run's log position: each write stores where the lines whose events were stored by then end. */
    final LatestWriter<Supplier<Future<?>>> logPosition = new LatestWriter<>(Supplier::get);
    /** The profiler report's pieces, until PROFILED says the run is done. */
    final ReportPieces report = new ReportPieces();
    /** Done once the report is stored (or known not to be): what the run says after PROFILED waits for it. */
    Future<Void> afterReport = Future.succeededFuture();

    Run(String id, boolean provisions) {
      this.id = id;
      this.provisions = provisions;
    }
  }
}
