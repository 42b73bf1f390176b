package dev.kernelrunner.tracker;

import dev.kernelrunner.backend.Backend;
import dev.kernelrunner.backend.RunOrder;
import dev.kernelrunner.bus.Addresses;
import dev.kernelrunner.bus.Bus;
import dev.kernelrunner.bus.Failures;
import dev.kernelrunner.config.AppConfig;
import dev.kernelrunner.config.AppConfig.GpuType;
import dev.kernelrunner.model.BaselineJobs;
import dev.kernelrunner.model.Cancel;
import dev.kernelrunner.model.EventAppend;
import dev.kernelrunner.model.EventFrame;
import dev.kernelrunner.model.EventType;
import dev.kernelrunner.model.EventWrite;
import dev.kernelrunner.model.LiveFrame;
import dev.kernelrunner.model.Mode;
import dev.kernelrunner.model.NewEvent;
import dev.kernelrunner.model.NewSubmission;
import dev.kernelrunner.model.Progress;
import dev.kernelrunner.model.Queues;
import dev.kernelrunner.model.Unfinished;
import dev.kernelrunner.store.QuotaUsage;
import io.micrometer.core.instrument.MeterRegistry;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.VerticleBase;
import io.vertx.core.eventbus.DeliveryOptions;
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
 * The one owner of every submission's life, and one queue per GPU type. Whatever happens to a submission (its
 * run's events and end, a cancel, a store failure, a restart) is an input to {@link Lifecycle}, whose decision this
 * verticle performs: events stored in order, one write at a time per submission whatever statement stores them, then
 * published on {@code submissions.events.<id>}; runs started and stopped; a GPU slot held from dispatch until the
 * run is gone.
 */
public class SubmissionTrackerVerticle extends VerticleBase {
  private static final Logger log = LoggerFactory.getLogger(SubmissionTrackerVerticle.class);
  private static final Duration EXIT_REPLY_WAIT = Duration.ofSeconds(10);
  /** What a refused input fails with (the caller's reply says so). */
  private static final String REFUSED = "refused";
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
          .filter(t -> t.gpuType.equals(type.name()) && t.live(status)).count()));
      Map<EventType, java.util.function.Supplier<Number>> oldestInStatus = new LinkedHashMap<>();
      TrackerMeters.LIVE_STATUSES.forEach(status -> oldestInStatus.put(status, () -> {
        long now = System.nanoTime();
        return active.values().stream().filter(t -> t.gpuType.equals(type.name()) && t.live(status))
            .mapToLong(t -> now - t.enteredAt).max().orElse(0) / 1e9;
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
      // Answered once the run is followed, which for a dstack run takes a call to dstack.
      DeliveryOptions wait = new DeliveryOptions()
          .setSendTimeout(config.dstack().requestTimeout().multipliedBy(2).plusSeconds(30).toMillis());
      requests.add(bus.request(Addresses.SUPERVISOR_ATTACH, attach, wait).onFailure(error -> {
        log.error("could not re-attach to {}: {}", id, error.toString());
        Tracked tracked = active.get(id);
        if (tracked != null) {
          apply(tracked, new Lifecycle.RunEnded(new Progress.Failed(EventType.ERROR, new JsonObject()
              .put("message", "the service restarted and could not follow this run again")
              .put("details", error.getMessage())), List.of()));
        }
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

  private Future<NewSubmission.Created> create(NewSubmission request) {
    FairQueue<Tracked> queue = queues.get(request.gpuType());
    if (queue == null) {
      return Future.failedFuture(new Failures.CodedException(Failures.BAD_REQUEST,
          "GPU type " + request.gpuType() + " is not served"));
    }
    String id = UUID.randomUUID().toString();
    // Where it will stand (users take turns); if creates of others landed first, it is told its new place.
    int position = queue.placeFor(request.userId());
    QuotaUsage.Limits limits = request.mode() == Mode.BASELINE ? QuotaUsage.Limits.NONE : QuotaUsage.Limits.of(config);
    JsonObject row = request.toJson().put("id", id).put("position", position).mergeIn(limits.toJson());
    // The stored first event comes back as a record: no date to parse again from text.
    return bus.<EventFrame>request(Addresses.STORE_SUBMISSION_CREATE, row).map(Message::body).map(first -> {
      Tracked tracked = new Tracked(id, request.userId(), request.gpuType(), Lifecycle.State.queued(request.mode()),
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
      return new NewSubmission.Created(id, EventType.IN_QUEUE.name(), position, first.seq());
    });
  }

  /**
   * Starts queued submissions while their GPU type has free slots, then tells the rest where they stand. Only
   * a start moves anyone (a new submission joins at the end), so a create that starts nothing does not walk
   * the queue: at a deadline, with thousands waiting, that walk per create was the tracker's biggest cost.
   */
  private boolean dispatch(String gpuType) {
    FairQueue<Tracked> queue = queues.get(gpuType);
    String backend = gpuTypes.get(gpuType).backend();
    boolean started = false;
    while (running.get(gpuType) < capacity.get(gpuType) && !queue.isEmpty()) {
      started = true;
      apply(queue.poll(), new Lifecycle.Dispatch(backend));
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
        apply(queued, new Lifecycle.Moved(position));
      }
      position++;
    }
  }

  // ---- what happens to a submission, as the backends and others tell it

  /** Answers an event with whether it was stored, an exit with the submission's status once its end is stored. */
  private Future<?> progress(Progress progress) {
    Tracked tracked = active.get(progress.submissionId());
    if (progress instanceof Progress.Exit exit) {
      if (tracked == null) {
        return Future.succeededFuture((String) null);
      }
      // The answer (the supervisor's, then a kill's) does not wait past a few seconds for a database that is
      // away: the end is held and retried.
      return apply(tracked, new Lifecycle.RunEnded(exit.outcome(), exit.logTail()))
          .timeout(EXIT_REPLY_WAIT.toMillis(), java.util.concurrent.TimeUnit.MILLISECONDS)
          .transform(ar -> Future.succeededFuture(tracked.state.status().name()));
    }
    Progress.Event event = (Progress.Event) progress;
    if (tracked == null) {
      log.warn("dropped {} for {}: not running", event.type(), event.submissionId());
      return Future.succeededFuture(Boolean.FALSE);
    }
    return apply(tracked, new Lifecycle.Event(event.type(), event.fields(), event.payload()))
        .transform(ar -> Future.succeededFuture(ar.succeeded()));
  }

  /**
   * Cancels a submission: a queued one ends at once, a running one once its run is gone (the answer waits for
   * that); one that has ended says how. The answer holds the status after it.
   */
  private Future<Cancel.Outcome> cancel(Cancel request) {
    Tracked tracked = active.get(request.submissionId());
    if (tracked == null) {
      return Bus.request(bus, Addresses.STORE_SUBMISSION_GET, new JsonObject().put("id", request.submissionId()))
          .map(row -> new Cancel.Outcome(Cancel.Kind.NOT_ACTIVE, row.getString("status")));
    }
    boolean queued = tracked.state.phase() == Lifecycle.Phase.QUEUED;
    Future<Void> done = apply(tracked, new Lifecycle.CancelAsked(request.cancelledBy(), request.reason()));
    if (queued) {
      updatePositions(tracked.gpuType);
    }
    return done.transform(ar -> Future.succeededFuture(new Cancel.Outcome(
        ar.failed() && REFUSED.equals(ar.cause().getMessage()) ? Cancel.Kind.FINISHED : Cancel.Kind.TAKEN,
        tracked.state.status().name())));
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
    return Future.failedFuture(new Failures.CodedException(404, "no GPU type " + gpuType));
  }

  /**
   * The GPU type cannot run anything now (its local worker does not start): the submissions waiting for it end as
   * ERROR with the reason, rather than wait for a worker that is not coming.
   */
  private Future<Integer> failQueued(Queues.FailQueued failed) {
    FairQueue<Tracked> queue = queues.get(failed.gpuType());
    if (queue == null) {
      return noSuchType(failed.gpuType());
    }
    List<Tracked> waiting = new ArrayList<>();
    queue.forEach(waiting::add);
    waiting.forEach(tracked -> apply(tracked, new Lifecycle.Unserved(failed.message())));
    return Future.succeededFuture(waiting.size());
  }

  // ---- performing the lifecycle's decisions

  /**
   * Feeds {@code input} to the submission's lifecycle and performs the decision. The future completes once what it
   * stored is stored and a stop it asked for is done; it fails with {@link #REFUSED} when the input did not apply,
   * or with a store's failure.
   */
  private Future<Void> apply(Tracked tracked, Lifecycle.Input input) {
    Lifecycle.State before = tracked.state;
    Lifecycle.Decision decision = Lifecycle.decide(before, input, config.agent().submissionTimeout().toSeconds());
    if (decision.refused()) {
      if (!(input instanceof Lifecycle.StoreFailed)) { // said once per retry while the database is away
        log.warn("{} for {} in {}: refused ({})", input.getClass().getSimpleName(), tracked.id, before.phase(),
            ((Lifecycle.Refused) decision.effects().get(0)).why());
      }
      return Future.failedFuture(REFUSED);
    }
    tracked.state = decision.next();
    if (decision.next().status() != before.status()) {
      timePhase(tracked, before.status());
      tracked.enteredAt = System.nanoTime();
    }
    List<Future<?>> waits = new ArrayList<>();
    for (Lifecycle.Effect effect : decision.effects()) {
      Future<?> wait = perform(tracked, effect);
      if (wait != null) {
        waits.add(wait);
      }
    }
    return Future.all(waits).mapEmpty();
  }

  /** Performs one effect; returns what the caller's answer waits for, or null. */
  private Future<?> perform(Tracked tracked, Lifecycle.Effect effect) {
    String gpuType = tracked.gpuType;
    if (effect instanceof Lifecycle.Store store) {
      return store(tracked, store.type(), store.fields(), store.payload(), store.write());
    } else if (effect instanceof Lifecycle.Enqueue) {
      tracked.lastPosition = -1;
      queues.get(gpuType).add(tracked);
    } else if (effect instanceof Lifecycle.Requeue requeue) {
      FairQueue<Tracked> queue = queues.get(gpuType);
      int position = 0;
      if (requeue.first()) {
        queue.addFirst(tracked);
      } else {
        position = queue.add(tracked);
      }
      tracked.lastPosition = position;
      tracked.queuedSince = System.nanoTime();
      Future<?> stored = store(tracked, EventType.IN_QUEUE, requeue.fields().copy().put("position", position), null,
          Lifecycle.Write.REQUEUE);
      if (requeue.first()) {
        updatePositions(gpuType); // the others moved back
      }
      return stored;
    } else if (effect instanceof Lifecycle.LeaveQueue) {
      queues.get(gpuType).remove(tracked);
    } else if (effect instanceof Lifecycle.TakeSlot) {
      running.merge(gpuType, 1, Integer::sum);
    } else if (effect instanceof Lifecycle.Start start) {
      bus.request(Addresses.SUPERVISOR_START, new RunOrder.Start(tracked.id, gpuType, start.backend()))
          .onFailure(error -> {
            // The supervisor never saw it, so no exit will come: say so ourselves, to free the slot.
            log.error("supervisor did not take {}: {}", tracked.id, error.toString());
            apply(tracked, new Lifecycle.RunEnded(new Progress.NotStarted(error.getMessage()), List.of()));
          });
    } else if (effect instanceof Lifecycle.Attach attach) {
      toAttach.add(attach.order());
    } else if (effect instanceof Lifecycle.Kill) {
      return bus.request(Addresses.SUPERVISOR_KILL, new RunOrder.Kill(tracked.id), new DeliveryOptions()
              .setSendTimeout(config.agent().killGrace().plusSeconds(30).toMillis()))
          .onFailure(error -> log.warn("could not stop the run of {}: {}", tracked.id, error.toString()));
    } else if (effect instanceof Lifecycle.FreeSlot) {
      // Once its end is stored: the owner's quota counts stored rows.
      return tracked.chain.transform(ar -> {
        running.merge(gpuType, -1, Integer::sum);
        dispatch(gpuType);
        return Future.succeededFuture();
      });
    } else if (effect instanceof Lifecycle.Forget) {
      return tracked.chain.transform(ar -> {
        active.remove(tracked.id, tracked);
        return Future.succeededFuture();
      });
    }
    return null;
  }

  // ---- storing and publishing events

  /**
   * Stores then publishes an event after every earlier event of the same submission, whatever statement stores it
   * ({@code write}); completes with its stored frame.
   */
  private Future<EventFrame> store(Tracked tracked, EventType type, JsonObject fields, String encoded,
                                   Lifecycle.Write write) {
    String payload = encoded == null ? fields.encode() : encoded;
    boolean terminal = type.isTerminal(tracked.state.mode());
    JsonObject result = type == EventType.BENCHMARKED || type == EventType.CHECKED || type == EventType.PROFILED
        || type == EventType.BASELINED ? fields : null;
    JsonObject errorRow = !type.isError() ? null : new JsonObject().put("type", type.name())
        .put("message", fields.getValue("message")).put("details", fields.getValue("details"));
    Lifecycle.Canceller canceller = type == EventType.CANCELLED ? tracked.state.cancel() : null;
    NewEvent event = new NewEvent(type, fields, payload, terminal, result, errorRow,
        canceller == null ? null : canceller.by(), canceller == null ? null : canceller.reason());
    String address = switch (write) {
      case APPEND -> null;
      case VERDICT -> Addresses.STORE_EVENTS_VERIFIED;
      case REQUEUE -> Addresses.STORE_SUBMISSION_REQUEUE;
    };
    Promise<EventFrame> promise = Promise.promise();
    // Every event of a submission, whatever address stores it, joins the one queue: written in the order
    // accepted, held and retried alike while the database is away; no write waits on any other.
    tracked.unwritten.add(new Unwritten(event, promise, address));
    writeEvents(tracked);
    Future<EventFrame> stored = promise.future()
        .onSuccess(frame -> bus.publish(Addresses.events(tracked.id), new LiveFrame(frame, payload)))
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
        if (type == EventType.BASELINED) {
          // Stored as the GPU type's newest baselines; if that fails, the next start stores them (BaselinesVerticle).
          bus.request(Addresses.BASELINES_MEASURED, new BaselineJobs.Measured(tracked.id, tracked.gpuType, fields))
              .onFailure(error -> log.error("baseline job {}: its figures are not stored yet: {}", tracked.id,
                  error.getMessage()));
        } else if (type == EventType.CANCELLED) {
          meters.cancelled(tracked.gpuType, canceller == null ? null : canceller.reason());
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
   * pause (see {@link WriteRetry}); what the store refuses for good is dropped, and the lifecycle told.
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
      frames = bus.<EventFrame>request(first.address(), new EventWrite(tracked.id, first.event()))
          .map(reply -> List.of(reply.body()));
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
          if (decision == WriteRetry.Decision.GIVE_UP) {
            apply(tracked, new Lifecycle.StoreFailed("the database could not store this submission's events for "
                + config.database().eventWriteRetry().toSeconds() + " s (or " + MAX_HELD_EVENTS + " of them)", false));
          }
          vertx.setTimer(tracked.retry.pauseMillis(), t -> writeEvents(tracked));
        }
        case DROP -> {
          tracked.unwritten.subList(0, group.size()).clear();
          group.forEach(unwritten -> unwritten.promise().fail(ar.cause()));
          if (Failures.code(ar.cause()) != Failures.CONFLICT) {
            apply(tracked, new Lifecycle.StoreFailed("an event of this submission could not be stored: "
                + ar.cause().getMessage(), group.stream().anyMatch(u -> u.event().terminal())));
          }
          writeEvents(tracked);
        }
      }
    });
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
   * Puts back what the database shows unfinished (see {@link Lifecycle.RestartFound}): queued ones in line again;
   * runs that outlive the service followed again; others' left-over processes killed, then re-queued once, or
   * failed the second time; results whose verdict will never come recorded as not checked.
   */
  private Future<Void> reconcile() {
    return ask(Addresses.STORE_SUBMISSION_UNFINISHED).compose(unfinished -> Future.join(unfinished.submissions()
            .stream().map(this::reconcileOne).toList()))
        .compose(v -> ask(Addresses.STORE_SUBMISSION_VERDICT_PENDING))
        .compose(pending -> Future.join(pending.submissions().stream()
            .map(found -> apply(found(found, EventType.BENCHMARKED, Mode.BENCHMARK),
                new Lifecycle.RestartFound(null, true, null)))
            .toList()))
        .compose(v -> {
          queues.keySet().forEach(gpuType -> {
            dispatch(gpuType);
            updatePositions(gpuType); // the re-queued learn where they stand even when nothing could start
          });
          return Future.<Void>succeededFuture();
        });
  }

  private Future<Unfinished> ask(String address) {
    return bus.<Unfinished>request(address, new Unfinished.Asked()).map(Message::body);
  }

  private Future<?> reconcileOne(Unfinished.Found row) {
    String id = row.id();
    Tracked tracked = found(row, row.status(), row.mode());
    active.put(id, tracked);
    if (!queues.containsKey(tracked.gpuType)) {
      return apply(tracked, new Lifecycle.RestartFound("GPU type " + tracked.gpuType
          + " is no longer served by this service", false, null));
    }
    if (tracked.state.status() == EventType.IN_QUEUE) {
      return apply(tracked, new Lifecycle.RestartFound(null, false, null));
    }
    // A dstack run, or a worker's job, goes on without us; not a job of this host's own workers, which the service
    // stopped, and their jobs with them, when it stopped.
    boolean ownWorkers = config.local().viaWorkers() && config.local().gpuTypes().contains(tracked.gpuType);
    boolean outlives = AppConfig.DSTACK_BACKEND.equals(row.backend())
        || AppConfig.WORKER_BACKEND.equals(row.backend()) && !ownWorkers;
    if (outlives && row.runName() != null) {
      return apply(tracked, new Lifecycle.RestartFound(null, false, new RunOrder.Attach(row.backend(),
          new Backend.Resume(id, row.runName(), row.logOffset(), row.logPosition(), row.eventKey(),
              tracked.state.mode(), tracked.gpuType))));
    }
    Future<?> reaped = row.pid() == null ? Future.succeededFuture()
        : bus.request(Addresses.SUPERVISOR_REAP, new RunOrder.Reap(id, row.pid())).otherwise(error -> {
              log.warn("could not reap the old process of {}: {}", id, error.toString());
              return null;
            });
    return reaped.compose(v -> apply(tracked, new Lifecycle.RestartFound(null, false, null)));
  }

  private Tracked found(Unfinished.Found row, EventType status, Mode mode) {
    Tracked tracked = new Tracked(row.id(), row.userId(), row.gpuType(),
        Lifecycle.State.found(status, mode, row.restartCount()), config.database().eventWriteRetry());
    tracked.lastPosition = -1;
    return tracked;
  }

  /**
   * An event waiting to be written and who waits for its stored frame; {@code address}: the store's own statement
   * for it (a re-queue, a verdict), or null for a plain append (written in groups).
   */
  private record Unwritten(NewEvent event, Promise<EventFrame> promise, String address) {}

  /** One submission this service is responsible for, from creation until its lifecycle forgets it. */
  private static final class Tracked {
    final String id;
    final String userId;
    final String gpuType;
    /** Where it stands: changed only by {@link #apply}. */
    Lifecycle.State state;
    int lastPosition;
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

    Tracked(String id, String userId, String gpuType, Lifecycle.State state, Duration writeBudget) {
      this.retry = new WriteRetry(writeBudget, MAX_HELD_EVENTS);
      this.id = id;
      this.userId = userId;
      this.gpuType = gpuType;
      this.state = state;
    }

    /** Whether it is in {@code status} and has not ended. */
    boolean live(EventType status) {
      return state.status() == status && !state.phase().ended();
    }
  }
}
