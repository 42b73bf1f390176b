package dev.kernelrunner.tracker;

import dev.kernelrunner.backend.Backend;
import dev.kernelrunner.backend.RunOrder;
import dev.kernelrunner.bus.Addresses;
import dev.kernelrunner.bus.Bus;
import dev.kernelrunner.bus.Failures;
import dev.kernelrunner.config.AppConfig;
import dev.kernelrunner.config.AppConfig.GpuType;
import dev.kernelrunner.model.Cancel;
import dev.kernelrunner.model.EventAppend;
import dev.kernelrunner.model.EventFrame;
import dev.kernelrunner.model.EventType;
import dev.kernelrunner.model.LiveFrame;
import dev.kernelrunner.model.Mode;
import dev.kernelrunner.model.NewEvent;
import dev.kernelrunner.model.NewSubmission;
import dev.kernelrunner.model.Progress;
import dev.kernelrunner.model.Queues;
import dev.kernelrunner.store.QuotaUsage;
import io.micrometer.core.instrument.MeterRegistry;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.VerticleBase;
import io.vertx.core.eventbus.EventBus;
import io.vertx.core.eventbus.Message;
import io.vertx.core.json.JsonObject;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The submission state machine and one queue per GPU type. Every event of a submission passes through
 * here: it is checked against the lifecycle, stored (in order, one at a time per submission), then
 * published on {@code submissions.events.<id>}. A GPU slot is held from dispatch until the process is gone.
 */
public class SubmissionTrackerVerticle extends VerticleBase {
  private static final Logger log = LoggerFactory.getLogger(SubmissionTrackerVerticle.class);
  private static final Duration EXIT_REPLY_WAIT = Duration.ofSeconds(10);
  /** Events of one submission held in memory while the database is away; past this it is ended as ERROR. */
  static final int MAX_HELD_EVENTS = 10_000;
  /** At most this many events go in one append. */
  private static final int MAX_GROUP = 1000;

  private final AppConfig config;
  private final Map<String, GpuType> gpuTypes;
  private final TrackerMeters meters;
  private final Map<String, Tracked> active = new HashMap<>();
  private final Map<String, FairQueue<Tracked>> queues = new LinkedHashMap<>();
  private final Map<String, Integer> running = new HashMap<>();
  /** Runs in flight at most per GPU type: configured, or (worker types) the connected workers. */
  private final Map<String, Integer> capacity = new HashMap<>();
  /** Runs of an earlier instance to follow again, found by reconciliation (backend runs that outlive us). */
  private final List<RunOrder.Attach> toAttach = new ArrayList<>();
  private EventBus bus;

  public SubmissionTrackerVerticle(AppConfig config, Map<String, GpuType> gpuTypes, MeterRegistry meters) {
    this.config = config;
    this.gpuTypes = gpuTypes;
    this.meters = new TrackerMeters(meters);
  }

  @Override
  public Future<?> start() {
    bus = vertx.eventBus();
    gpuTypes.values().forEach(type -> {
      FairQueue<Tracked> queue = new FairQueue<>(tracked -> tracked.userId);
      queues.put(type.name(), queue);
      running.put(type.name(), 0);
      capacity.put(type.name(), type.capacity());
      Map<EventType, java.util.function.Supplier<Number>> byStatus = new LinkedHashMap<>();
      TrackerMeters.LIVE_STATUSES.forEach(status -> byStatus.put(status, () -> active.values().stream()
          .filter(t -> t.gpuType.equals(type.name()) && t.status == status && !t.terminal).count()));
      Map<EventType, java.util.function.Supplier<Number>> oldestInStatus = new LinkedHashMap<>();
      TrackerMeters.LIVE_STATUSES.forEach(status -> oldestInStatus.put(status, () -> {
        long now = System.nanoTime();
        return active.values().stream().filter(t -> t.gpuType.equals(type.name()) && t.status == status
                && !t.terminal).mapToLong(t -> now - t.enteredAt).max().orElse(0) / 1e9;
      }));
      meters.gauges(type.name(), byStatus, oldestInStatus, queue::size, () -> {
        long now = System.nanoTime();
        return queue.heads().stream().mapToDouble(head -> (now - head.queuedSince) / 1e9).max().orElse(0);
      }, () -> running.get(type.name()), () -> capacity.get(type.name()));
    });
    return reconcile().compose(v -> Future.all(List.of(
        Bus.serve(bus, Addresses.SUBMISSIONS_CREATE, this::create, log),
        Bus.serve(bus, Addresses.SUBMISSIONS_PROGRESS, this::progress, log),
        Bus.serve(bus, Addresses.TRACKER_CANCEL, this::cancel, log),
        Bus.serve(bus, Addresses.TRACKER_QUEUES, this::queueState, log),
        Bus.serve(bus, Addresses.TRACKER_CAPACITY, this::capacityChanged, log),
        Bus.serve(bus, Addresses.TRACKER_FAIL_QUEUED, this::failQueued, log))))
        .compose(v -> reattach())
        .onSuccess(v -> {
          sweep();
          meters.refresh();
          vertx.setPeriodic(1000, t -> meters.refresh());
        });
  }

  /** Follows again the runs that went on while the service was down (their progress arrives from now on). */
  private Future<Void> reattach() {
    List<Future<?>> requests = new ArrayList<>();
    for (RunOrder.Attach attach : toAttach) {
      String id = attach.submissionId();
      requests.add(bus.request(Addresses.SUPERVISOR_ATTACH, attach).onFailure(error -> {
        log.error("could not re-attach to {}: {}", id, error.toString());
        onExit(new Progress.Exit(id, null, false, false, false, null, List.of(), EventType.ERROR,
            new JsonObject().put("message", "the service restarted and could not follow this run again")
                .put("details", error.getMessage()), null));
      }));
    }
    toAttach.clear();
    return Future.join(requests).mapEmpty();
  }

  /** Backend runs of this service that no live submission owns are stopped (they would only cost money). */
  private void sweep() {
    gpuTypes.values().stream().map(GpuType::backend).distinct().forEach(backend ->
        bus.<Integer>request(Addresses.SUPERVISOR_SWEEP, new RunOrder.Sweep(backend)).map(Message::body)
            .onSuccess(stopped -> {
              if (stopped > 0) {
                log.warn("stopped {} {} run(s) that belonged to no live submission", stopped,
                    backend);
              }
            })
            .onFailure(error -> log.warn("could not look for orphan {} runs: {}", backend, error.getMessage())));
  }

  // ---- creating and queueing

  private Future<JsonObject> create(JsonObject body) {
    NewSubmission request = NewSubmission.fromJson(body);
    FairQueue<Tracked> queue = queues.get(request.gpuType());
    if (queue == null) {
      return Future.failedFuture(new Failures.CodedException(Failures.BAD_REQUEST,
          "GPU type " + request.gpuType() + " is not served"));
    }
    String id = UUID.randomUUID().toString();
    // Where it will stand (users take turns); if creates of others landed first, it is told its new place.
    int position = queue.placeFor(request.userId());
    JsonObject row = request.toJson().put("id", id).put("position", position)
        .mergeIn(QuotaUsage.Limits.of(config).toJson());
    // The stored first event comes back as a record: no date to parse again from text.
    return bus.<EventFrame>request(Addresses.STORE_SUBMISSION_CREATE, row).map(Message::body).map(first -> {
      Tracked tracked = new Tracked(id, request.userId(), request.gpuType(), request.mode(),
          config.database().eventWriteRetry());
      tracked.lastPosition = position;
      active.put(id, tracked);
      int place = queue.add(tracked);
      bus.publish(Addresses.events(id), new LiveFrame(first, first.fields().encode()));
      meters.created(request.gpuType());
      log.atInfo().addKeyValue("submission_id", id).addKeyValue("status", EventType.IN_QUEUE.name())
          .log("submission {} created: {} for {}, queue position {}", id, request.problem(), request.gpuType(),
              position);
      if (!dispatch(request.gpuType()) && (place != position || place < queue.size() - 1)) {
        updatePositions(request.gpuType()); // it went ahead of others' later turns: they moved back
      }
      return new JsonObject().put("id", id).put("status", EventType.IN_QUEUE.name())
          .put("position", position).put("seq", first.seq());
    });
  }

  /**
   * Starts queued submissions while their GPU type has free slots, then tells the rest where they stand. Only
   * a start moves anyone (a new submission joins at the end), so a create that starts nothing does not walk
   * the queue: at a deadline, with thousands waiting, that walk per create was the tracker's biggest cost.
   */
  private boolean dispatch(String gpuType) {
    FairQueue<Tracked> queue = queues.get(gpuType);
    GpuType type = gpuTypes.get(gpuType);
    boolean started = false;
    while (running.get(gpuType) < capacity.get(gpuType) && !queue.isEmpty()) {
      started = true;
      Tracked next = queue.poll();
      running.merge(gpuType, 1, Integer::sum);
      next.dispatched = true;
      accept(next, EventType.PROVISIONING, new JsonObject().put("backend", type.backend()), null);
      bus.request(Addresses.SUPERVISOR_START, new RunOrder.Start(next.id, gpuType, type.backend())).onFailure(error -> {
        // The supervisor never saw it, so no exit will come: report one ourselves to free the slot.
        log.error("supervisor did not take {}: {}", next.id, error.toString());
        onExit(new Progress.Exit(next.id, null, false, false, false, error.getMessage(), List.of()));
      });
    }
    if (started) {
      updatePositions(gpuType);
    }
    return started;
  }

  /**
   * Tells queued submissions their new place. Near the head every move is sent; further back only moves of a
   * tenth or more, so that a long queue does not cost a stored event per waiting submission per dispatch.
   */
  private void updatePositions(String gpuType) {
    int position = 0;
    for (Tracked queued : queues.get(gpuType)) {
      boolean worthTelling = position < 50 || queued.lastPosition < 0 || position > queued.lastPosition
          || queued.lastPosition - position >= queued.lastPosition / 10;
      if (queued.lastPosition != position && worthTelling) {
        queued.lastPosition = position;
        accept(queued, EventType.IN_QUEUE, new JsonObject().put("position", position), null);
      }
      position++;
    }
  }

  // ---- progress from backends

  /** Answers an event with whether it was stored, an exit with the submission's final status. */
  private Future<?> progress(Progress progress) {
    if (progress instanceof Progress.Exit exit) {
      return onExit(exit).otherwise((String) null);
    }
    Progress.Event event = (Progress.Event) progress;
    Tracked tracked = active.get(event.submissionId());
    if (tracked == null) {
      log.warn("dropped {} for {}: not running", event.type(), event.submissionId());
      return Future.succeededFuture(Boolean.FALSE);
    }
    boolean verdict = event.type() == EventType.VERIFIED;
    if (!event.type().fromAgent() || !tracked.status.accepts(event.type(), tracked.mode)
        || verdict != (tracked.timingPending && tracked.terminal)) {
      log.warn("dropped illegal transition {} -> {} for {}", tracked.status, event.type(), tracked.id);
      return Future.succeededFuture(Boolean.FALSE);
    }
    return accept(tracked, event.type(), event.fields(), event.payload(),
            verdict ? Addresses.STORE_EVENTS_VERIFIED : null)
        .transform(ar -> Future.succeededFuture(ar.succeeded()));
  }

  /** The process is gone: record how it ended (unless the agent already did), free the slot, start the next. */
  private Future<String> onExit(Progress.Exit exit) {
    Tracked tracked = active.get(exit.submissionId());
    if (tracked == null || !tracked.dispatched) {
      return Future.succeededFuture(tracked == null ? null : tracked.status.name());
    }
    RunEnd.Decision decision = RunEnd.decide(new RunEnd.State(tracked.terminal, tracked.timingPending,
        tracked.cancelledBy, tracked.cancelReason, tracked.restarts, tracked.status), exit,
        config.agent().submissionTimeout().toSeconds());
    if (decision instanceof RunEnd.Requeue requeue) {
      return requeueLost(tracked, requeue.why());
    }
    // The run is gone: a second report of its end (a kill's and the agent's own, say) frees no second slot.
    tracked.dispatched = false;
    if (decision instanceof RunEnd.End end) {
      if (end.cancelledBy() != null) {
        tracked.cancelledBy = end.cancelledBy();
        tracked.cancelReason = end.cancelReason();
      }
      accept(tracked, end.type(), end.fields(), null);
    } else if (((RunEnd.Ended) decision).verdictLost()) {
      // Published before its times were cross-checked, and the agent ended without the verdict: say so.
      notChecked(tracked, "the agent ended before its timing cross-check");
    }
    // The slot is freed once the end is stored (the quota counts stored rows). The answer (the supervisor's,
    // then a cancel's) does not wait past a few seconds for a database that is away: the end is held and retried.
    Future<String> stored = tracked.chain.transform(ar -> {
      active.remove(tracked.id);
      running.merge(tracked.gpuType, -1, Integer::sum);
      dispatch(tracked.gpuType);
      return Future.succeededFuture(tracked.status.name());
    });
    return stored.timeout(EXIT_REPLY_WAIT.toMillis(), java.util.concurrent.TimeUnit.MILLISECONDS)
        .otherwise(error -> tracked.status.name());
  }

  /**
   * The run's machine went away for good (a worker that did not come back): the submission goes back to the head
   * of its queue, once; its restart count says so, and a second loss ends it as ERROR.
   */
  private Future<String> requeueLost(Tracked tracked, String why) {
    log.warn("re-queueing {}: {}", tracked.id, why);
    running.merge(tracked.gpuType, -1, Integer::sum);
    tracked.dispatched = false;
    tracked.restarts++;
    tracked.status = EventType.IN_QUEUE;
    tracked.lastPosition = 0;
    tracked.queuedSince = System.nanoTime();
    queues.get(tracked.gpuType).addFirst(tracked);
    accept(tracked, EventType.IN_QUEUE, new JsonObject().put("position", 0).put("reason", "worker_lost")
        .put("message", "re-queued: " + why), Addresses.STORE_SUBMISSION_REQUEUE);
    updatePositions(tracked.gpuType);
    dispatch(tracked.gpuType);
    return Future.succeededFuture(tracked.status.name());
  }

  // ---- cancellation

  private Future<Cancel.Outcome> cancel(Cancel request) {
    Tracked tracked = active.get(request.submissionId());
    if (tracked == null) {
      return Future.succeededFuture(new Cancel.Outcome(Cancel.Kind.NOT_ACTIVE, null));
    }
    if (tracked.terminal) {
      return Future.succeededFuture(new Cancel.Outcome(Cancel.Kind.FINISHED, tracked.status.name()));
    }
    if (tracked.cancelledBy == null) {
      tracked.cancelledBy = request.cancelledBy();
      tracked.cancelReason = request.reason();
    }
    if (tracked.dispatched) {
      return Future.succeededFuture(new Cancel.Outcome(Cancel.Kind.RUNNING, tracked.status.name()));
    }
    queues.get(tracked.gpuType).remove(tracked);
    Future<Cancel.Outcome> cancelled = accept(tracked, EventType.CANCELLED,
        RunEnd.cancelFields(tracked.cancelledBy, tracked.cancelReason), null).transform(ar -> {
          active.remove(tracked.id);
          return Future.succeededFuture(new Cancel.Outcome(Cancel.Kind.CANCELLED, tracked.status.name()));
        });
    updatePositions(tracked.gpuType);
    return cancelled;
  }

  private Future<Queues> queueState(Queues.Asked asked) {
    Map<String, Queues.Queue> state = new HashMap<>();
    gpuTypes.forEach((name, type) -> state.put(name, new Queues.Queue(type.backend(), capacity.get(name),
        running.get(name), queues.get(name).size())));
    return Future.succeededFuture(new Queues(state));
  }

  /** A worker type's capacity is its connected workers': more may start now, or fewer from now on. */
  private Future<Boolean> capacityChanged(Queues.Capacity changed) {
    String gpuType = changed.gpuType();
    if (!capacity.containsKey(gpuType)) {
      return noSuchType(gpuType);
    }
    capacity.put(gpuType, changed.capacity());
    dispatch(gpuType);
    return Future.succeededFuture(true);
  }

  private static <T> Future<T> noSuchType(String gpuType) {
    return Future.failedFuture(new dev.kernelrunner.bus.Failures.CodedException(404, "no GPU type " + gpuType));
  }

  /**
   * The GPU type cannot run anything now (its local worker does not start): the submissions waiting for it end as
   * ERROR with the reason, rather than wait for a worker that is not coming.
   */
  private Future<Integer> failQueued(Queues.FailQueued failed) {
    String gpuType = failed.gpuType();
    FairQueue<Tracked> queue = queues.get(gpuType);
    if (queue == null) {
      return noSuchType(gpuType);
    }
    List<Tracked> waiting = new ArrayList<>();
    queue.forEach(waiting::add);
    for (Tracked tracked : waiting) {
      queue.remove(tracked);
      accept(tracked, EventType.ERROR, new JsonObject().put("message", failed.message()).put("details", ""), null)
          .onComplete(ar -> active.remove(tracked.id));
    }
    return Future.succeededFuture(waiting.size());
  }

  // ---- storing and publishing events

  /**
   * Moves the submission to {@code type} now (so later checks see it) and stores then publishes the event
   * after every earlier event of the same submission. {@code storeAddress} null means a plain append.
   */
  private Future<EventFrame> accept(Tracked tracked, EventType type, JsonObject fields, String storeAddress) {
    return accept(tracked, type, fields, fields.encode(), storeAddress);
  }

  /** As above, with the fields already encoded ({@code payload}). */
  private Future<EventFrame> accept(Tracked tracked, EventType type, JsonObject fields, String payload,
                                   String storeAddress) {
    if (tracked.terminal && !(type == EventType.VERIFIED && tracked.timingPending)) {
      log.warn("dropped {} for {}: already {}", type, tracked.id, tracked.status);
      return Future.failedFuture("finished");
    }
    if (type == EventType.VERIFIED) {
      tracked.timingPending = false;
    }
    if (type.changesStatus() && type != tracked.status) {
      timePhase(tracked, tracked.status);
      tracked.status = type;
      tracked.enteredAt = System.nanoTime();
    }
    boolean terminal = type.isTerminal(tracked.mode);
    tracked.terminal = tracked.terminal || terminal;
    if (type == EventType.BENCHMARKED) {
      tracked.timingPending = EventType.timingPending(fields);
    }
    JsonObject result = type == EventType.BENCHMARKED || type == EventType.CHECKED || type == EventType.PROFILED
        ? fields : null;
    JsonObject errorRow = !type.isError() ? null : new JsonObject().put("type", type.name())
        .put("message", fields.getValue("message")).put("details", fields.getValue("details"));
    boolean cancelled = type == EventType.CANCELLED;
    NewEvent event = new NewEvent(type, fields, payload, terminal, result, errorRow,
        cancelled ? tracked.cancelledBy : null, cancelled ? tracked.cancelReason : null);
    JsonObject own = storeAddress == null ? null : new JsonObject().put("submission_id", tracked.id)
        .put("type", type.name()).put("fields", fields).put("terminal", terminal);
    Promise<EventFrame> promise = Promise.promise();
    // Every event of a submission, whatever address stores it, joins the one queue: written in the order
    // accepted, held and retried alike while the database is away; no write waits on any other.
    tracked.unwritten.add(new Unwritten(event, promise, storeAddress, own));
    writeEvents(tracked);
    Future<EventFrame> stored = promise.future();
    stored = stored.onSuccess(frame -> bus.publish(Addresses.events(tracked.id), new LiveFrame(frame, payload)))
        .onFailure(error -> log.error("could not store {} for {}: {}", type, tracked.id, error.toString()));
    tracked.chain = stored.mapEmpty();
    if (type.changesStatus()) {
      stored.onSuccess(frame -> log.atInfo().addKeyValue("submission_id", tracked.id)
          .addKeyValue("status", type.name()).log("submission {} is {}{}", tracked.id, type.name(),
              fields.getValue("message") == null ? "" : ": " + fields.getValue("message")));
    }
    if (terminal) {
      stored.onSuccess(frame -> {
        meters.finished(tracked.gpuType, type);
        meters.phase(tracked.gpuType, "total", System.nanoTime() - tracked.createdAt);
        meters.result(tracked.gpuType, type, fields);
        if (type == EventType.CANCELLED) {
          meters.cancelled(tracked.gpuType, tracked.cancelReason);
        } else if (type == EventType.TIME_LIMIT_EXCEEDED) {
          meters.timedOut(tracked.gpuType);
        }
      });
    }
    return stored;
  }

  /**
   * Stores a submission's events in order, one write at a time; the events that arrive while a write runs go
   * together in the next one (a group append), so a busy submission is not held to one event per round trip.
   * While the database is away the events are held, in order, and the write is tried again with a growing
   * pause (see {@link WriteRetry}); what the store refuses for good is dropped and the submission ended.
   */
  private void writeEvents(Tracked tracked) {
    if (tracked.writing || tracked.unwritten.isEmpty()) {
      return;
    }
    Unwritten first = tracked.unwritten.get(0);
    List<Unwritten> group;
    Future<List<EventFrame>> frames;
    if (first.address() != null) {
      // Stored through its own statement (a verdict, a re-queue): alone, in its turn.
      group = List.of(first);
      frames = Bus.request(bus, first.address(), first.body()).map(reply -> List.of(EventFrame.fromJson(reply)));
    } else {
      int end = 0;
      while (end < tracked.unwritten.size() && end < MAX_GROUP && tracked.unwritten.get(end).address() == null) {
        end++;
      }
      group = List.copyOf(tracked.unwritten.subList(0, end));
      EventAppend append = new EventAppend(tracked.id, group.stream().map(Unwritten::event).toList());
      frames = bus.<EventAppend.Stored>request(Addresses.STORE_EVENTS_APPEND, append)
          .map(reply -> reply.body().frames());
    }
    tracked.writing = true;
    frames.onComplete(ar -> {
      tracked.writing = false;
      WriteRetry.Decision decision = ar.succeeded() ? WriteRetry.Decision.STORED
          : tracked.retry.onFailure(Failures.code(ar.cause()), System.nanoTime(), tracked.unwritten.size());
      switch (decision) {
        case STORED -> {
          tracked.retry.onSuccess();
          tracked.unwritten.subList(0, group.size()).clear();
          for (int i = 0; i < group.size(); i++) {
            group.get(i).promise().complete(ar.result().get(i));
          }
          writeEvents(tracked);
        }
        case RETRY, GIVE_UP -> {
          if (tracked.retry.attempts() == 1) {
            log.warn("could not store {} event(s) of {} ({}); holding them and trying again", group.size(),
                tracked.id, ar.cause().getMessage());
          }
          if (decision == WriteRetry.Decision.GIVE_UP && !tracked.terminal) {
            endUnstored(tracked, "the database could not store this submission's events for "
                + config.database().eventWriteRetry().toSeconds() + " s (or " + MAX_HELD_EVENTS + " of them)");
          }
          vertx.setTimer(tracked.retry.pauseMillis(), t -> writeEvents(tracked));
        }
        case DROP -> {
          tracked.unwritten.subList(0, group.size()).clear();
          group.forEach(unwritten -> unwritten.promise().fail(ar.cause()));
          boolean lostTheEnd = group.stream().anyMatch(u -> u.event().terminal());
          if (Failures.code(ar.cause()) != Failures.CONFLICT && (!tracked.terminal || lostTheEnd)) {
            tracked.terminal = false; // the end that was refused was never stored: another one must be
            endUnstored(tracked, "an event of this submission could not be stored: " + ar.cause().getMessage());
          }
          writeEvents(tracked);
        }
      }
    });
  }

  /** Ends a submission whose events cannot be stored: ERROR (held and retried like any event), process stopped. */
  private void endUnstored(Tracked tracked, String message) {
    log.error("ending {}: {}", tracked.id, message);
    accept(tracked, EventType.ERROR, new JsonObject().put("message", message), null);
    if (tracked.dispatched) {
      bus.request(Addresses.SUPERVISOR_KILL, new RunOrder.Kill(tracked.id),
              new io.vertx.core.eventbus.DeliveryOptions().setSendTimeout(Duration.ofMinutes(5).toMillis()))
          .onFailure(error -> log.warn("could not stop the process of {}: {}", tracked.id, error.toString()));
    } else {
      queues.get(tracked.gpuType).remove(tracked);
      tracked.chain.onComplete(ar -> active.remove(tracked.id));
    }
  }

  /** Records the time spent in {@code status}, which the submission is leaving now. */
  private void timePhase(Tracked tracked, EventType status) {
    String phase = switch (status) {
      case IN_QUEUE -> "queue_wait";
      case PROVISIONING -> "provisioning";
      case COMPILING -> "compile";
      case CHECKING -> "check";
      case BENCHMARKING -> "benchmark";
      case PROFILING -> "profile";
      default -> null;
    };
    if (phase != null && tracked.enteredAt != 0) {
      meters.phase(tracked.gpuType, phase, System.nanoTime() - tracked.enteredAt);
    }
  }

  // ---- restart reconciliation

  /**
   * Puts back what the database shows unfinished: queued ones in line again; running ones (whose process
   * died with the previous service) killed if left over, then re-queued once, or failed the second time.
   */
  private Future<Void> reconcile() {
    return Bus.request(bus, Addresses.STORE_SUBMISSION_UNFINISHED, new JsonObject()).compose(reply -> {
      List<Future<?>> steps = new ArrayList<>();
      for (Object item : reply.getJsonArray("submissions")) {
        steps.add(reconcileOne((JsonObject) item));
      }
      return Future.join(steps);
    }).compose(v -> Bus.request(bus, Addresses.STORE_SUBMISSION_VERDICT_PENDING, new JsonObject())).compose(reply -> {
      List<Future<?>> verdicts = new ArrayList<>();
      for (Object item : reply.getJsonArray("submissions")) {
        verdicts.add(verdictLost((JsonObject) item));
      }
      return Future.join(verdicts);
    }).compose(v -> {
      queues.keySet().forEach(gpuType -> {
        dispatch(gpuType);
        updatePositions(gpuType); // the re-queued learn where they stand even when nothing could start
      });
      return Future.<Void>succeededFuture();
    });
  }

  /**
   * A result published with its timing verdict to come, whose agent went with the service that ran it (a kill, a
   * restart): nothing will send the verdict now, so it is recorded as never checked, and the result's stream ends.
   */
  private Future<?> verdictLost(JsonObject row) {
    Tracked tracked = new Tracked(row.getString("id"), row.getString("user_id"), row.getString("gpu_type"),
        Mode.BENCHMARK, config.database().eventWriteRetry());
    tracked.status = EventType.BENCHMARKED;
    tracked.terminal = true;
    tracked.timingPending = true;
    return notChecked(tracked, "the service restarted before the timing verdict came");
  }

  /** The verdict of a result whose times were to be checked, and never will be: VERIFIED not_checked. */
  private Future<EventFrame> notChecked(Tracked tracked, String reason) {
    return accept(tracked, EventType.VERIFIED, new JsonObject().put("timing", new JsonObject()
        .put("status", "not_checked").put("reason", reason)), Addresses.STORE_EVENTS_VERIFIED);
  }

  private Future<?> reconcileOne(JsonObject row) {
    String id = row.getString("id");
    Tracked tracked = new Tracked(id, row.getString("user_id"), row.getString("gpu_type"),
        Mode.parse(row.getString("mode")).orElse(Mode.BENCHMARK), config.database().eventWriteRetry());
    tracked.status = EventType.valueOf(row.getString("status"));
    tracked.lastPosition = -1;
    active.put(id, tracked);
    FairQueue<Tracked> queue = queues.get(tracked.gpuType);
    if (queue == null) {
      return accept(tracked, EventType.ERROR, new JsonObject()
          .put("message", "GPU type " + tracked.gpuType + " is no longer served by this service"), null)
          .onComplete(ar -> active.remove(id));
    }
    if (tracked.status == EventType.IN_QUEUE) {
      queue.add(tracked);
      return Future.succeededFuture();
    }
    tracked.restarts = row.getInteger("restart_count", 0);
    // A dstack run, or a worker's job, goes on without us; not a job of this host's own workers, which the service
    // stopped, and their jobs with them, when it stopped.
    boolean ownWorkers = config.local().viaWorkers() && config.local().gpuTypes().contains(tracked.gpuType);
    boolean outlives = AppConfig.DSTACK_BACKEND.equals(row.getString("backend"))
        || AppConfig.WORKER_BACKEND.equals(row.getString("backend")) && !ownWorkers;
    if (outlives && row.getString("run_name") != null) {
      // Follow it again rather than start over.
      tracked.dispatched = true;
      running.merge(tracked.gpuType, 1, Integer::sum);
      toAttach.add(new RunOrder.Attach(row.getString("backend"), new Backend.Resume(id, row.getString("run_name"),
          row.getInteger("log_offset", 0), row.getString("log_position"), row.getString("event_key"), tracked.mode,
          tracked.gpuType)));
      return Future.succeededFuture();
    }
    Future<?> reaped = row.getInteger("pid") == null ? Future.succeededFuture()
        : bus.request(Addresses.SUPERVISOR_REAP, new RunOrder.Reap(id, row.getInteger("pid"))).otherwise(error -> {
              log.warn("could not reap the old process of {}: {}", id, error.toString());
              return null;
            });
    return reaped.compose(v -> {
      if (row.getInteger("restart_count", 0) >= 1) {
        return accept(tracked, EventType.ERROR, new JsonObject()
            .put("message", "the service restarted twice while this submission ran; giving up"), null)
            .onComplete(ar -> active.remove(id));
      }
      tracked.status = EventType.IN_QUEUE;
      tracked.lastPosition = queue.add(tracked);
      return accept(tracked, EventType.IN_QUEUE, new JsonObject().put("position", tracked.lastPosition)
          .put("reason", "restarted"), Addresses.STORE_SUBMISSION_REQUEUE);
    });
  }

  /**
   * An event waiting to be written and who waits for its stored frame; {@code address}: the store's own statement
   * for it (a re-queue, a verdict) with its {@code body}, or null for a plain append (written in groups).
   */
  private record Unwritten(NewEvent event, Promise<EventFrame> promise, String address, JsonObject body) {}

  /** One submission this service is responsible for, from creation until its process is gone. */
  private static final class Tracked {
    final String id;
    final String userId;
    final String gpuType;
    final Mode mode;
    EventType status = EventType.IN_QUEUE;
    boolean terminal;
    /** Ended BENCHMARKED with its times still being cross-checked: one VERIFIED is still to come. */
    boolean timingPending;
    boolean dispatched;
    /** Times it was put back in line (a restart, a lost worker); the database's restart count. */
    int restarts;
    int lastPosition;
    String cancelledBy;
    String cancelReason;
    /** The last accepted event stored (an end is awaited on it); no write waits on it: they are queued in order. */
    Future<Void> chain = Future.succeededFuture();
    /** Events accepted but not yet sent to the store, and whether a write of this submission is running. */
    final List<Unwritten> unwritten = new ArrayList<>();
    boolean writing;
    final WriteRetry retry;
    /** Monotonic times: created (or taken over at a restart), entered its status, joined its queue. */
    final long createdAt = System.nanoTime();
    long enteredAt = createdAt;
    long queuedSince = createdAt;

    Tracked(String id, String userId, String gpuType, Mode mode, Duration writeBudget) {
      this.retry = new WriteRetry(writeBudget, MAX_HELD_EVENTS);
      this.id = id;
      this.userId = userId;
      this.gpuType = gpuType;
      this.mode = mode;
    }
  }
}
