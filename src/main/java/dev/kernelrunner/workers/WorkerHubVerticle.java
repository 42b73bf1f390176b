package dev.kernelrunner.workers;

import dev.kernelrunner.backend.AgentOutput;
import dev.kernelrunner.backend.Backend;
import dev.kernelrunner.backend.RunListener;
import dev.kernelrunner.bus.Addresses;
import dev.kernelrunner.bus.Bus;
import dev.kernelrunner.bus.Failures.CodedException;
import dev.kernelrunner.config.AppConfig;
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
import java.time.Instant;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
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
  private EventBus bus;

  public WorkerHubVerticle(AppConfig config) {
    this.config = config;
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
    return Future.all(List.of(
        Bus.serve(bus, Addresses.WORKERS_CONNECT, this::connect, log),
        Bus.<WorkerProtocol.Disconnect>serve(bus, Addresses.WORKERS_DISCONNECT, d -> {
          disconnect(d.connectionId());
          return Future.succeededFuture(new JsonObject());
        }, log),
        Bus.serve(bus, Addresses.WORKERS_LINES, this::lines, log),
        Bus.serve(bus, Addresses.WORKERS_EXIT, this::exit, log),
        Bus.<JsonObject>serve(bus, Addresses.WORKERS_LIST, body -> Future.succeededFuture(list()), log)));
  }

  // ---- workers

  private Future<JsonObject> connect(WorkerProtocol.Connect hello) {
    if (!gpuTypes.contains(hello.gpuType())) {
      return Future.failedFuture(new CodedException(400, "GPU type '" + hello.gpuType()
          + "' is not served by workers here (WORKER_GPU_TYPES: " + String.join(", ", gpuTypes) + ")"));
    }
    Worker worker = workers.get(hello.workerId());
    if (worker != null && !worker.tokenUser.equals(hello.tokenUser())) {
      return Future.failedFuture(new CodedException(409, "worker id '" + hello.workerId()
          + "' is in use by another worker token"));
    }
    if (worker != null && worker.connectionId != null) {
      // A newer stream of the same worker (the old one is half-open): the new one takes over.
      push(worker.connectionId, "replaced", new JsonObject());
      byConnection.remove(worker.connectionId);
    }
    if (worker == null) {
      worker = new Worker(hello.workerId(), hello.tokenUser());
      workers.put(worker.id, worker);
    }
    if (worker.connectionId == null) {
      worker.since = Instant.now();
    }
    worker.connectionId = hello.connectionId();
    worker.gpuType = hello.gpuType();
    worker.host = hello.host();
    worker.device = hello.device();
    byConnection.put(worker.connectionId, worker);
    Job held = hello.holding() == null ? null : jobs.get(hello.holding());
    if (worker.job != null && worker.job != held) {
      lost(worker.job, "its worker " + worker.id + " came back without it");
    }
    JsonObject reply = new JsonObject().put("worker_id", worker.id);
    if (hello.holding() != null) {
      if (held == null || (held.worker != null && held.worker != worker) || !held.gpuType.equals(worker.gpuType)) {
        push(worker.connectionId, "drop", new JsonObject().put("job_id", hello.holding()));
      } else {
        bind(held, worker);
        reply.put("job_id", held.id).put("resume_from", held.lines.consumed());
        log.info("worker {} is back with job {} of {} (from line {})", worker.id, held.id, held.submissionId,
            held.lines.consumed());
        if (held.killing) {
          push(worker.connectionId, "cancel", new JsonObject().put("job_id", held.id));
        }
      }
    }
    log.info("worker {} ({}, {}, {}) connected", worker.id, worker.host, worker.gpuType, worker.device);
    capacityChanged(worker.gpuType);
    assignWaiting(worker.gpuType);
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
      JsonObject entry = new JsonObject().put("id", worker.id).put("token_user", worker.tokenUser)
          .put("host", worker.host).put("gpu_type", worker.gpuType).put("device", worker.device)
          .put("connected", worker.connectionId != null).put("connected_since", worker.since.toString())
          .put("jobs_done", worker.jobsDone);
      if (worker.job != null) {
        entry.put("current_job", new JsonObject().put("job_id", worker.job.id)
            .put("submission_id", worker.job.submissionId).put("state", worker.job.state.name()));
      }
      list.add(entry);
    });
    return new JsonObject().put("workers", list);
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
      Worker free = workers.values().stream()
          .filter(w -> w.connectionId != null && w.job == null && gpuType.equals(w.gpuType))
          .min(java.util.Comparator.comparingInt(w -> w.jobsDone)).orElse(null);
      if (free == null) {
        return;
      }
      Job job = queue.poll();
      bind(job, free);
      log.info("job {} of {} goes to worker {} ({})", job.id, job.submissionId, free.id, free.host);
      push(free.connectionId, "job", new JsonObject().put("job_id", job.id).put("submission_id", job.submissionId)
          .put("payload", job.payload));
    }
  }

  private void bind(Job job, Worker worker) {
    job.worker = worker;
    job.state = JobState.RUNNING;
    vertx.cancelTimer(job.lostTimer);
    worker.job = job;
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
    Job job = jobOf(batch.tokenUser(), batch.workerId(), batch.jobId());
    int seen = job.lines.seen(batch.from(), batch.lines().size());
    if (seen < 0) {
      return Future.succeededFuture(new WorkerProtocol.Consumed(job.lines.consumed()));
    }
    List<AgentOutput.Event> events = new ArrayList<>();
    for (String line : batch.lines().subList(seen, batch.lines().size())) {
      AgentOutput.Event event = job.output.accept(line);
      if (event != null) {
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

  private Future<JsonObject> exit(WorkerProtocol.Exit exit) {
    Job job = jobOf(exit.tokenUser(), exit.workerId(), exit.jobId());
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
  private Job jobOf(String tokenUser, String workerId, String jobId) {
    Job job = jobs.get(jobId);
    if (job == null) {
      throw new CodedException(404, "no job " + jobId + " here (ended, cancelled or re-queued): drop it");
    }
    if (job.worker == null) {
      // Taken over after a restart: which worker holds it is known once its stream is back.
      throw new CodedException(409, "open the job stream (holding " + jobId + ") first");
    }
    if (!job.worker.id.equals(workerId) || !job.worker.tokenUser.equals(tokenUser)) {
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
    end(job);
    job.caller.runOnContext(v -> job.listener.onExit(exitCode, job.output.tail()));
  }

  private void lost(Job job, String why) {
    if (job.state == JobState.ENDED) {
      return;
    }
    log.warn("job {} of {} is lost: {}", job.id, job.submissionId, why);
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

  private static final class Worker {
    final String id;
    final String tokenUser;
    String gpuType;
    String host;
    String device;
    /** The open job stream; null while the worker is away with a job. */
    String connectionId;
    Instant since = Instant.now();
    Job job;
    int jobsDone;

    Worker(String id, String tokenUser) {
      this.id = id;
      this.tokenUser = tokenUser;
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
    boolean killing;
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
        Job job = new Job(resume.runName(), resume.submissionId(), resume.gpuType(), null,
            new AgentOutput.RunOutput(resume.submissionId(), key, config.agent().logTailLines()), resume.lines(),
            listener, caller);
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
      return job.id;
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
