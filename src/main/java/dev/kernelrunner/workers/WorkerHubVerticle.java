package dev.kernelrunner.workers;

import dev.kernelrunner.backend.AgentOutput;
import dev.kernelrunner.backend.AgentPayload;
import dev.kernelrunner.backend.Backend;
import dev.kernelrunner.backend.RunListener;
import dev.kernelrunner.bus.Addresses;
import dev.kernelrunner.bus.Bus;
import dev.kernelrunner.bus.Failures.CodedException;
import dev.kernelrunner.config.AppConfig;
import dev.kernelrunner.model.EventType;
import dev.kernelrunner.model.Mode;
import dev.kernelrunner.model.Queues;
import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.VerticleBase;
import io.vertx.core.eventbus.EventBus;
import io.vertx.core.eventbus.ReplyException;
import io.vertx.core.eventbus.ReplyFailure;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The GPU workers that connect to this service and the jobs they run. A worker opens a job stream (the HTTP
 * edge turns it into {@link WorkerProtocol.Connect}), gets jobs and cancels pushed on it, and posts its agent's
 * lines and exit back. This verticle is also the backend of the worker GPU types ({@link #backend()}): the
 * supervisor starts, follows and kills runs through it as it does local and dstack runs.
 *
 * <p>A job is WAITING (no worker free yet), RUNNING (on a connected worker), AWAY (its worker's stream is gone:
 * it may come back holding the job within {@code WORKER_LOST_SECONDS}) or ended. A job whose worker does not come
 * back is reported lost, and the tracker re-queues it once. All state lives on this verticle's context.
 */
public final class WorkerHubVerticle extends VerticleBase {
  private static final Logger log = LoggerFactory.getLogger(WorkerHubVerticle.class);

  private final AppConfig config;
  private final List<String> gpuTypes;
  private final Map<String, Worker> workers = new LinkedHashMap<>();
  private final Map<String, Worker> byConnection = new HashMap<>();
  private final Map<String, Job> jobs = new HashMap<>();
  private final Map<String, ArrayDeque<Job>> waiting = new HashMap<>();
  private final Backend backend = new HubBackend();
  /** Between a job id and its holder's token id in a run name. */
  private static final String HOLDER = "~";
  /** How each machine (a token on a host) has done lately, kept while the service runs. */
  private final Map<String, Health> healths = new HashMap<>();
  /** Where each submission's last job was lost: its next job goes elsewhere when it can. */
  private final Map<String, String> lostOn = new HashMap<>();
  /** The check job's problem and its known kernel (src/main/resources/check/). */
  static final String CHECK_PROBLEM = "vector-addition";
  private final String checkCode;
  private EventBus bus;

  public WorkerHubVerticle(AppConfig config) {
    this.config = config;
    try (InputStream in = WorkerHubVerticle.class.getResourceAsStream("/check/" + CHECK_PROBLEM + ".hip")) {
      this.checkCode = new String(in.readAllBytes(), StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    this.gpuTypes = config.gpuTypes().values().stream()
        .filter(type -> AppConfig.WORKER_BACKEND.equals(type.backend())).map(AppConfig.GpuType::name).toList();
    gpuTypes.forEach(type -> waiting.put(type, new ArrayDeque<>()));
  }

  /** The backend of the worker GPU types; usable once this verticle has started. */
  public Backend backend() {
    return backend;
  }

  @Override
  public Future<?> start() {
    bus = vertx.eventBus();
    // A quarantined machine whose last check failed is given another once WORKER_CHECK_SECONDS have passed.
    vertx.setPeriodic(1000, t -> List.copyOf(workers.values()).forEach(this::maybeCheck));
    return Future.all(List.of(
        Bus.serve(bus, Addresses.WORKERS_CONNECT, this::connect, log),
        Bus.<WorkerProtocol.Disconnect>serve(bus, Addresses.WORKERS_DISCONNECT, d -> {
          disconnect(d.connectionId());
          return Future.succeededFuture(new JsonObject());
        }, log),
        Bus.serve(bus, Addresses.WORKERS_LINES, this::lines, log),
        Bus.serve(bus, Addresses.WORKERS_EXIT, this::exit, log),
        Bus.<JsonObject>serve(bus, Addresses.WORKERS_LIST, body -> Future.succeededFuture(list()), log),
        Bus.<JsonObject>serve(bus, Addresses.WORKERS_RELEASE, this::release, log),
        bus.<JsonObject>consumer(Addresses.TOKENS_REVOKED, message -> revoked(message.body().getJsonArray("ids")))
            .completion()));
  }

  // ---- workers

  private Future<JsonObject> connect(WorkerProtocol.Connect hello) {
    if (!gpuTypes.contains(hello.gpuType())) {
      return Future.failedFuture(new CodedException(400, "GPU type '" + hello.gpuType()
          + "' is not served by workers here (WORKER_GPU_TYPES: " + String.join(", ", gpuTypes) + ")"));
    }
    Worker worker = workers.get(hello.workerId());
    if (worker != null && !worker.token.id().equals(hello.token().id())) {
      return Future.failedFuture(new CodedException(409, "worker id '" + hello.workerId()
          + "' is in use by another worker token"));
    }
    Job claimed = hello.holding() == null ? null : jobs.get(hello.holding());
    if (claimed != null && claimed.holder != null && !claimed.holder.equals(hello.token().id())) {
      // Only the token it was given to may take it back; it stays with its holder until WORKER_LOST_SECONDS.
      log.warn("a worker with token {} named job {} of {}, which belongs to another token: refused",
          hello.token().id(), claimed.id, claimed.submissionId);
      return Future.failedFuture(new CodedException(403, "job " + claimed.id
          + " was given to another worker token; it is not yours to resume"));
    }
    Health health = health(hello.token(), hello.host(), hello.device());
    if (worker == null) {
      health.started(hello.workerId(), System.currentTimeMillis());
    }
    if (worker != null && worker.connectionId != null) {
      // A newer stream of the same worker (the old one is half-open): the new one takes over.
      push(worker.connectionId, "replaced", new JsonObject());
      byConnection.remove(worker.connectionId);
    }
    if (worker == null) {
      worker = new Worker(hello.workerId(), hello.token());
      workers.put(worker.id, worker);
    }
    if (worker.connectionId == null) {
      worker.since = Instant.now();
    }
    worker.connectionId = hello.connectionId();
    String previousType = worker.gpuType;
    worker.gpuType = hello.gpuType();
    worker.host = hello.host();
    worker.device = hello.device();
    byConnection.put(worker.connectionId, worker);
    Job held = hello.holding() == null ? null : jobs.get(hello.holding());
    boolean resumes = held != null && (held.worker == null || held.worker == worker)
        && held.gpuType.equals(worker.gpuType);
    if (worker.job != null && !(resumes && worker.job == held)) {
      lost(worker.job, "its worker " + worker.id + " came back without it (or as another GPU type)");
    }
    JsonObject reply = new JsonObject().put("worker_id", worker.id);
    if (hello.holding() != null) {
      if (!resumes) {
        push(worker.connectionId, "drop", new JsonObject().put("job_id", hello.holding()));
      } else {
        bind(held, worker);
        held.sent = true; // the worker has it
        reply.put("job_id", held.id).put("resume_from", held.lines.consumed());
        log.info("worker {} is back with job {} of {} (from line {})", worker.id, held.id, held.submissionId,
            held.lines.consumed());
        if (held.killing) {
          push(worker.connectionId, "cancel", new JsonObject().put("job_id", held.id));
        }
      }
    }
    log.info("worker {} ({}, {}, {}, pool {}) connected", worker.id, worker.host, worker.gpuType, worker.device,
        worker.token.pool());
    if (previousType != null && !previousType.equals(worker.gpuType)) {
      capacityChanged(previousType); // it serves another type now: the old one has one worker fewer
    }
    capacityChanged(worker.gpuType);
    assignWaiting(worker.gpuType);
    maybeCheck(worker);
    return Future.succeededFuture(reply);
  }

  private void disconnect(String connectionId) {
    Worker worker = byConnection.remove(connectionId);
    if (worker == null || !connectionId.equals(worker.connectionId)) {
      return;
    }
    worker.connectionId = null;
    Job job = worker.job;
    if (job == null) {
      workers.remove(worker.id);
      log.info("worker {} disconnected", worker.id);
    } else {
      job.state = JobState.AWAY;
      armLost(job);
      log.warn("worker {} disconnected while running job {} of {}; it has {} s to come back", worker.id, job.id,
          job.submissionId, config.workers().lostAfter().toSeconds());
    }
    capacityChanged(worker.gpuType);
  }

  private JsonObject list() {
    JsonArray list = new JsonArray();
    workers.values().forEach(worker -> {
      Health health = health(worker);
      long now = System.currentTimeMillis();
      JsonObject entry = new JsonObject().put("id", worker.id).put("token_user", worker.token.user())
          .put("token_id", worker.token.id()).put("pool", worker.token.pool()).put("trusted", worker.token.trusted())
          .put("host", worker.host).put("gpu_type", worker.gpuType).put("device", worker.device)
          .put("connected", worker.connectionId != null).put("connected_since", worker.since.toString())
          .put("jobs_done", worker.jobsDone)
          .put("health", new JsonObject().put("recent_losses", health.recentLosses(now))
              .put("losses_in_a_row", health.lossesInARow).put("restarted_recently", health.restartedRecently(now))
              .put("quarantined", health.quarantined).put("check", health.lastCheck));
      if (worker.job != null) {
        entry.put("current_job", new JsonObject().put("job_id", worker.job.id)
            .put("submission_id", worker.job.submissionId).put("state", worker.job.state.name()));
      }
      list.add(entry);
    });
    return new JsonObject().put("workers", list);
  }

  /** Tokens were revoked: their workers' streams close now (a stolen token gets nothing more). */
  private void revoked(JsonArray ids) {
    for (Worker worker : List.copyOf(workers.values())) {
      if (!ids.contains(worker.token.id())) {
        continue;
      }
      log.warn("worker {} ({}): its token was revoked; closing its stream", worker.id, worker.host);
      push(worker.connectionId, "revoked", new JsonObject());
      if (worker.connectionId != null) {
        // Its job is away from now on, as any job whose worker went: lost (and re-queued) after
        // WORKER_LOST_SECONDS, since the token can post nothing more. Not at once: the service's own workers'
        // token is revoked as the service stops, and their jobs are re-queued at the next start instead.
        disconnect(worker.connectionId);
      }
    }
  }

  /** An admin lets a quarantined worker's machine have jobs again. */
  private Future<JsonObject> release(JsonObject body) {
    Worker worker = workers.get(body.getString("worker_id"));
    if (worker == null) {
      return Future.failedFuture(new CodedException(404, "no worker " + body.getString("worker_id")));
    }
    Health health = health(worker);
    boolean was = health.quarantined;
    health.quarantined = false;
    health.lossesInARow = 0;
    log.info("worker {} ({}) let back by an admin (it was {}quarantined)", worker.id, worker.host, was ? "" : "not ");
    if (worker.gpuType != null) {
      assignWaiting(worker.gpuType);
    }
    return Future.succeededFuture(new JsonObject().put("worker_id", worker.id).put("was_quarantined", was));
  }

  /** A worker id of the GPU worker's form, {@code host:gpu:run} or {@code host:gpu:run@place}. */
  private static final Pattern PLACE = Pattern.compile("(.*):([^:@]*):([^:@]+)(@\\d+)?");

  /** The worker process a worker id is a place of ({@code host:run}); any other id is a process of its own. */
  static String processOf(String workerId) {
    Matcher place = PLACE.matcher(workerId);
    return place.matches() ? place.group(1) + ":" + place.group(3) : workerId;
  }

  /** The GPU a worker id is a place of ({@code host:gpu:run}); any other id is a GPU of its own. */
  static String gpuOf(String workerId) {
    Matcher place = PLACE.matcher(workerId);
    return place.matches() ? place.group(1) + ":" + place.group(2) + ":" + place.group(3) : workerId;
  }

  private Health health(Worker worker) {
    return health(worker.token, worker.host, worker.device);
  }

  private Health health(WorkerProtocol.Token token, String host, String device) {
    return healths.computeIfAbsent(token.id() + "|" + host + "|" + device, Health::new);
  }

  /** The tracker dispatches a worker type's queue to as many submissions as there are connected workers. */
  private void capacityChanged(String gpuType) {
    long connected = workers.values().stream()
        .filter(w -> w.connectionId != null && gpuType.equals(w.gpuType)).count();
    bus.request(Addresses.TRACKER_CAPACITY, new Queues.Capacity(gpuType, (int) connected))
        .onFailure(error -> {
          // No tracker: the service is stopping (the tracker is deployed before the server workers connect to,
          // undeployed after it, while the server's closed streams still reach here): not worth a line per worker.
          if (!(error instanceof ReplyException reply && reply.failureType() == ReplyFailure.NO_HANDLERS)) {
            log.warn("could not tell the tracker the capacity of {}: {}", gpuType, error.toString());
          }
        });
  }

  // ---- jobs

  private void assignWaiting(String gpuType) {
    ArrayDeque<Job> queue = waiting.get(gpuType);
    while (!queue.isEmpty()) {
      Job job = queue.peek();
      long now = System.currentTimeMillis();
      List<WorkerChoice.Candidate> free = workers.values().stream()
          .filter(w -> w.connectionId != null && w.job == null && gpuType.equals(w.gpuType))
          .map(w -> {
            Health health = health(w);
            boolean gpuBusy = workers.values().stream().anyMatch(other -> other != w && other.job != null
                && other.token.id().equals(w.token.id()) && gpuOf(other.id).equals(gpuOf(w.id)));
            return new WorkerChoice.Candidate(w.id, health.quarantined, health.recentLosses(now),
                health.restartedRecently(now), health.key.equals(lostOn.get(job.submissionId)), gpuBusy,
                w.jobsDone);
          }).toList();
      String chosen = WorkerChoice.pick(free);
      if (chosen == null) {
        return;
      }
      queue.poll();
      Worker worker = workers.get(chosen);
      log.info("job {} of {} goes to worker {} ({})", job.id, job.submissionId, worker.id, worker.host);
      send(job, worker);
    }
  }

  /** Gives {@code job} to {@code worker}: sent once its holder is stored (a restart in between must not leave the
   * job for any token to take). */
  private void send(Job job, Worker worker) {
    bind(job, worker).onComplete(ar -> {
      if (worker.job == job && job.state == JobState.RUNNING && !job.killing) {
        job.sent = true;
        push(worker.connectionId, "job", new JsonObject().put("job_id", job.id)
            .put("submission_id", job.submissionId).put("payload", job.payload)
            .put("check", job.listener instanceof Check));
      }
    });
  }

  /**
   * A quarantined machine's free, connected worker gets a check job (the catalog's vector-addition with a known
   * kernel, in check mode) when it has had none for WORKER_CHECK_SECONDS; passing it lets the machine back. It
   * shows the machine compiles, runs and reports again; it proves nothing about honesty (the worker holds the
   * job's key, as for any job): trust stays the pool's.
   */
  private void maybeCheck(Worker worker) {
    Health health = health(worker);
    long now = System.currentTimeMillis();
    if (!health.quarantined || health.checking || worker.connectionId == null || worker.job != null
        || (health.lastCheckAt >= 0 && now - health.lastCheckAt < config.workers().checkEvery().toMillis())) {
      return;
    }
    health.checking = true;
    health.lastCheckAt = now;
    String id = UUID.randomUUID().toString(); // of no submission; ids as a submission's job's, as workers expect
    AgentOutput.EventKey key = AgentOutput.EventKey.random();
    JsonObject payload = AgentPayload.of(config.agent(), id, CHECK_PROBLEM, "hip", "float32", checkCode,
        Mode.CHECK.wire(), worker.gpuType, key.base64());
    Job job = new Job(id + "." + UUID.randomUUID().toString().substring(0, 8), id, worker.gpuType, payload,
        new AgentOutput.RunOutput(id, key, config.agent().logTailLines()), 0, new Check(health, worker), context);
    jobs.put(job.id, job);
    log.info("worker {} ({}) is quarantined: check job {} goes to it", worker.id, worker.host, job.id);
    send(job, worker);
  }

  /** A check job's end, on the hub's context: a pass lets the machine back. */
  private final class Check implements RunListener {
    private final Health health;
    private final Worker worker;
    private EventType last;

    Check(Health health, Worker worker) {
      this.health = health;
      this.worker = worker;
    }

    @Override
    public void onEvent(EventType type, JsonObject fields) {
      last = type;
    }

    @Override
    public void onExit(Integer exitCode, List<String> logTail) {
      boolean passed = exitCode != null && exitCode == 0 && last == EventType.CHECKED;
      done(passed, (last == null ? "no event" : last.name()) + ", exit code " + exitCode);
    }

    @Override
    public void onFailed(EventType type, JsonObject fields, List<String> logTail) {
      done(false, type.name() + ": " + fields.getString("message"));
    }

    @Override
    public void onLost(String reason, List<String> logTail) {
      done(false, "lost: " + reason);
    }

    private void done(boolean passed, String detail) {
      health.checking = false;
      health.lastCheck = new JsonObject().put("at", Instant.now().toString()).put("passed", passed)
          .put("detail", detail);
      if (passed && health.quarantined) {
        health.quarantined = false;
        health.lossesInARow = 0;
        log.info("worker {} ({}) passed its check job: back in service", worker.id, worker.host);
        assignWaiting(worker.gpuType);
      } else if (!passed) {
        log.warn("worker {} ({}) failed its check job ({}): still quarantined", worker.id, worker.host, detail);
      }
    }
  }

  /** Done, on the hub's context, once the job's holder is stored. */
  private Future<Void> bind(Job job, Worker worker) {
    job.worker = worker;
    job.state = JobState.RUNNING;
    vertx.cancelTimer(job.lostTimer);
    worker.job = job;
    if (job.holder != null) {
      return Future.succeededFuture();
    }
    // Given to this token: its run name says so from now on, so that after a restart only it may resume the job.
    job.holder = worker.token.id();
    String runName = job.runName();
    Promise<Void> stored = Promise.promise();
    job.caller.runOnContext(v -> job.listener.onRunName(runName)
        .onComplete(ar -> context.runOnContext(x -> stored.complete())));
    return stored.future();
  }

  private void armLost(Job job) {
    vertx.cancelTimer(job.lostTimer);
    job.lostTimer = vertx.setTimer(config.workers().lostAfter().toMillis(), t -> {
      if (job.state == JobState.AWAY) {
        lost(job, job.worker == null ? "no worker came back with it after the service restarted"
            : "its worker " + job.worker.id + " went away and did not come back within "
                + config.workers().lostAfter().toSeconds() + " s");
      }
    });
  }

  private Future<WorkerProtocol.Consumed> lines(WorkerProtocol.Lines batch) {
    Job job = jobOf(batch.tokenId(), batch.workerId(), batch.jobId());
    int seen = job.lines.seen(batch.from(), batch.lines().size());
    if (seen < 0) {
      return Future.succeededFuture(new WorkerProtocol.Consumed(job.lines.consumed()));
    }
    List<AgentOutput.Event> events = new ArrayList<>();
    for (String line : batch.lines().subList(seen, batch.lines().size())) {
      AgentOutput.Event event = job.output.accept(line);
      if (event != null) {
        if (event.type() == EventType.BENCHMARKED) {
          stamp(event.fields(), job.worker);
        }
        events.add(event);
      }
    }
    job.lines.took(batch.lines().size() - seen);
    int consumed = job.lines.consumed();
    job.caller.runOnContext(v -> {
      events.forEach(event -> job.listener.onEvent(event.type(), event.fields()));
      job.listener.onLogPosition(consumed, null);
    });
    return Future.succeededFuture(new WorkerProtocol.Consumed(consumed));
  }

  /**
   * Says in a result who ran it ({@code runner}: the worker, its host, its token's pool), overwriting whatever the
   * lines said; a result of a pool not trusted to rank is published {@code ranked: false} with the reason, and the
   * leaderboards leave it out.
   */
  static void stamp(JsonObject result, Worker worker) {
    result.put("runner", new JsonObject().put("backend", AppConfig.WORKER_BACKEND).put("worker_id", worker.id)
        .put("host", worker.host).put("pool", worker.token.pool()).put("trusted", worker.token.trusted()));
    if (!worker.token.trusted()) {
      result.put("ranked", false).put("unranked_reason", "run by a worker of pool '" + worker.token.pool()
          + "', which is not trusted to rank");
    }
  }

  private Future<JsonObject> exit(WorkerProtocol.Exit exit) {
    Job job = jobOf(exit.tokenId(), exit.workerId(), exit.jobId());
    if (exit.lines() != job.lines.consumed()) {
      // Lines are missing: the worker sends them first, then its exit again.
      return Future.succeededFuture(new JsonObject().put("ended", false).put("consumed", job.lines.consumed()));
    }
    exit.tail().forEach(job.output::tail);
    log.info("job {} of {} ended on worker {} with exit code {}", job.id, job.submissionId, exit.workerId(),
        exit.exitCode());
    exited(job, exit.exitCode());
    return Future.succeededFuture(new JsonObject().put("ended", true));
  }

  /** The job {@code jobId} of this worker: 404 (drop it) when it is not, or no longer, one of the service's. */
  private Job jobOf(String tokenId, String workerId, String jobId) {
    Job job = jobs.get(jobId);
    if (job == null) {
      throw new CodedException(404, "no job " + jobId + " here (ended, cancelled or re-queued): drop it");
    }
    if (job.worker == null) {
      // Taken over after a restart: which worker holds it is known once its stream is back.
      throw new CodedException(409, "open the job stream (holding " + jobId + ") first");
    }
    if (!job.worker.id.equals(workerId) || !job.worker.token.id().equals(tokenId)) {
      throw new CodedException(404, "job " + jobId + " is not this worker's: drop it");
    }
    return job;
  }

  /** The job is over for the hub: its worker is free (or forgotten, when it is gone), the next job can go. */
  private void end(Job job) {
    job.state = JobState.ENDED;
    jobs.remove(job.id);
    waiting.get(job.gpuType).remove(job);
    vertx.cancelTimer(job.lostTimer);
    vertx.cancelTimer(job.killTimer);
    Worker worker = job.worker;
    if (worker != null && worker.job == job) {
      worker.job = null;
      worker.jobsDone++;
      if (worker.connectionId == null) {
        workers.remove(worker.id);
      }
    }
    assignWaiting(job.gpuType);
  }

  /** The job is over and its process gone ({@code exitCode} null: not known): the supervisor hears it. */
  private void exited(Job job, Integer exitCode) {
    if (job.worker != null && exitCode != null && !(job.listener instanceof Check)) {
      health(job.worker).lossesInARow = 0; // it saw a job through (a check job's listener decides on its own)
      lostOn.remove(job.submissionId);
    }
    end(job);
    job.caller.runOnContext(v -> job.listener.onExit(exitCode, job.output.tail()));
  }

  private void lost(Job job, String why) {
    if (job.state == JobState.ENDED) {
      return;
    }
    log.warn("job {} of {} is lost: {}", job.id, job.submissionId, why);
    if (job.worker != null) {
      Health health = health(job.worker);
      if (health.lost(System.currentTimeMillis())) {
        log.warn("worker {} ({}) lost {} jobs in a row: quarantined (no jobs until it passes a check job or an admin "
            + "lets it back)", job.worker.id, job.worker.host, health.lossesInARow);
      }
      if (!(job.listener instanceof Check)) {
        lostOn.put(job.submissionId, health.key);
      }
    }
    end(job);
    job.caller.runOnContext(v -> job.listener.onLost(why, job.output.tail()));
  }

  private void kill(Job job) {
    if (job.state == JobState.ENDED || job.killing) {
      return;
    }
    job.killing = true;
    switch (job.state) {
      case WAITING, AWAY -> exited(job, null);
      case RUNNING -> {
        if (!job.sent) { // bound, its holder not stored yet: the worker never saw it
          exited(job, null);
          return;
        }
        push(job.worker.connectionId, "cancel", new JsonObject().put("job_id", job.id));
        // A worker that never answers does not hold the submission forever.
        job.killTimer = vertx.setTimer(config.agent().killGrace().toMillis() + 5000, t -> {
          if (job.state != JobState.ENDED) {
            log.warn("worker {} did not end job {} of {} after a cancel; ending it here", job.worker.id, job.id,
                job.submissionId);
            exited(job, null);
          }
        });
      }
      default -> { }
    }
  }

  private void push(String connectionId, String event, JsonObject data) {
    if (connectionId != null) {
      bus.send(WorkerProtocol.pushAddress(connectionId), new WorkerProtocol.Push(event, data));
    }
  }

  private enum JobState { WAITING, RUNNING, AWAY, ENDED }

  /**
   * How one GPU of one machine (a worker token, a host, a device) has done lately: the jobs it lost (its worker
   * went away with them, or came back without them), how many in a row, whether its worker process came back under
   * a new id lately (a crash loop), and whether it is quarantined ({@link #QUARANTINE_AFTER} losses in a row: no
   * jobs until it passes a check job or an admin lets it back), and its check jobs.
   */
  private static final class Health {
    static final long RECENT_MS = java.time.Duration.ofMinutes(10).toMillis();
    static final long RESTART_MS = java.time.Duration.ofMinutes(5).toMillis();
    static final int QUARANTINE_AFTER = 3;
    final String key;
    final ArrayDeque<Long> losses = new ArrayDeque<>();
    int lossesInARow;
    boolean quarantined;
    /** A check job is out; when the last was given (-1: never); how it went (null: none yet). */
    boolean checking;
    long lastCheckAt = -1;
    JsonObject lastCheck;
    String lastWorkerId;
    long restartedAt = -1;

    Health(String key) {
      this.key = key;
    }

    /** A worker process of this machine's GPU connected for the first time as {@code workerId}. */
    /**
     * A worker of this machine connected for the first time. Another worker process means the last one ended; the
     * GPUs and places of one process ({@code host:0:run}, {@code host:0:run@2}, {@code host:1:run}) are one.
     */
    void started(String workerId, long now) {
      String process = processOf(workerId);
      if (lastWorkerId != null && !lastWorkerId.equals(process)) {
        restartedAt = now;
      }
      lastWorkerId = process;
    }

    /** It lost a job; true when that puts it in quarantine. */
    boolean lost(long now) {
      losses.add(now);
      lossesInARow++;
      boolean newly = !quarantined && lossesInARow >= QUARANTINE_AFTER;
      quarantined |= newly;
      return newly;
    }

    int recentLosses(long now) {
      while (!losses.isEmpty() && losses.peek() < now - RECENT_MS) {
        losses.poll();
      }
      return losses.size();
    }

    boolean restartedRecently(long now) {
      return restartedAt >= 0 && now - restartedAt < RESTART_MS;
    }
  }

  private static final class Worker {
    final String id;
    final WorkerProtocol.Token token;
    String gpuType;
    String host;
    String device;
    /** The open job stream; null while the worker is away with a job. */
    String connectionId;
    Instant since = Instant.now();
    Job job;
    int jobsDone;

    Worker(String id, WorkerProtocol.Token token) {
      this.id = id;
      this.token = token;
    }
  }

  private static final class Job {
    final String id;
    final String submissionId;
    final String gpuType;
    final JsonObject payload;
    final AgentOutput.RunOutput output;
    final JobLines lines;
    final RunListener listener;
    /** The supervisor's context: the listener is called there, in order. */
    final Context caller;
    JobState state = JobState.WAITING;
    Worker worker;
    /** The id of the worker token it was given to (null until then): only that token may resume it. */
    String holder;
    boolean killing;
    /** Pushed to its worker (or resumed by it): the worker knows it. */
    boolean sent;
    long lostTimer = -1;
    long killTimer = -1;

    Job(String id, String submissionId, String gpuType, JsonObject payload, AgentOutput.RunOutput output,
        int consumed, RunListener listener, Context caller) {
      this.id = id;
      this.submissionId = submissionId;
      this.gpuType = gpuType;
      this.payload = payload;
      this.output = output;
      this.lines = new JobLines(consumed);
      this.listener = listener;
      this.caller = caller;
    }

    /** Its run name: the job id, and once given to a worker, {@code ~} and the holder's token id. */
    String runName() {
      return holder == null ? id : id + HOLDER + holder;
    }
  }

  /** The supervisor's view: each call hops onto the hub's context, and answers on the caller's. */
  private final class HubBackend implements Backend {

    @Override
    public String name() {
      return AppConfig.WORKER_BACKEND;
    }

    @Override
    public Future<RunHandle> start(JsonObject payload, RunListener listener) {
      Context caller = vertx.getOrCreateContext();
      String submissionId = payload.getString("submission_id");
      AgentOutput.EventKey key = AgentOutput.EventKey.of(payload.getString("event_key"));
      String jobId = submissionId + "." + UUID.randomUUID().toString().substring(0, 8);
      Job job = new Job(jobId, submissionId, payload.getString("gpu_type"), payload,
          new AgentOutput.RunOutput(submissionId, key, config.agent().logTailLines()), 0, listener, caller);
      return onHub(caller, () -> {
        if (!waiting.containsKey(job.gpuType)) {
          throw new IllegalStateException("GPU type " + job.gpuType + " is not served by workers");
        }
        jobs.put(job.id, job);
        waiting.get(job.gpuType).add(job);
        assignWaiting(job.gpuType);
        return new Handle(job, job.worker == null ? "waiting for a worker" : job.worker.host + "/" + job.worker.id);
      });
    }

    @Override
    public Future<RunHandle> attach(Resume resume, RunListener listener) {
      Context caller = vertx.getOrCreateContext();
      AgentOutput.EventKey key = AgentOutput.EventKey.of(resume.eventKey());
      return onHub(caller, () -> {
        if (!waiting.containsKey(resume.gpuType())) {
          throw new IllegalStateException("GPU type " + resume.gpuType() + " is not served by workers");
        }
        String[] name = resume.runName().split(HOLDER, 2);
        Job job = new Job(name[0], resume.submissionId(), resume.gpuType(), null,
            new AgentOutput.RunOutput(resume.submissionId(), key, config.agent().logTailLines()), resume.lines(),
            listener, caller);
        job.holder = name.length > 1 ? name[1] : null;
        job.state = JobState.AWAY;
        jobs.put(job.id, job);
        armLost(job);
        return new Handle(job, "away");
      });
    }

    /** Runs {@code work} on the hub's context; its value (or failure) arrives on {@code caller}. */
    private <T> Future<T> onHub(Context caller, java.util.concurrent.Callable<T> work) {
      Promise<T> promise = Promise.promise();
      context.runOnContext(v -> {
        try {
          T value = work.call();
          caller.runOnContext(x -> promise.complete(value));
        } catch (Exception e) {
          caller.runOnContext(x -> promise.fail(e));
        }
      });
      return promise.future();
    }
  }

  private final class Handle implements Backend.RunHandle {
    private final Job job;
    private final String node;

    Handle(Job job, String node) {
      this.job = job;
      this.node = node;
    }

    @Override
    public Long pid() {
      return null;
    }

    @Override
    public String node() {
      return node;
    }

    @Override
    public String runName() {
      return job.runName();
    }

    @Override
    public void kill() {
      context.runOnContext(v -> WorkerHubVerticle.this.kill(job));
    }

    @Override
    public boolean survivesRestart() {
      return true;
    }
  }
}
