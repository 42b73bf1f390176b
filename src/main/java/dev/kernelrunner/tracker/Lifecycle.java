package dev.kernelrunner.tracker;

import dev.kernelrunner.backend.RunOrder;
import dev.kernelrunner.model.EventType;
import dev.kernelrunner.model.Mode;
import dev.kernelrunner.model.Progress;
import io.vertx.core.json.JsonObject;
import java.util.List;

/**
 * A submission's life, from its creation (or its discovery at a start) until the tracker forgets it: explicit
 * {@link Phase}s, a sealed set of {@link Input}s, and one pure {@link #decide} that returns the next {@link State}
 * and the {@link Effect}s to perform, in order (the house style of {@code dstack.RunDecision}). This is the only
 * place that decides how a submission ends; the tracker performs the effects (stores events in order, starts and
 * stops runs, keeps queues and slots) and feeds back what happens.
 *
 * <pre>
 *  FOUND --restart--> QUEUED | RUNNING | DONE
 *  QUEUED --dispatch--> RUNNING --agent's end--> ENDING | AWAITING_VERDICT --verdict--> ENDING
 *  RUNNING --cancel--> CANCELLING;  RUNNING | CANCELLING --store failed--> ENDING (its run killed)
 *  RUNNING --run lost (first time)--> QUEUED;  any live phase --run ended--> DONE
 *  QUEUED --cancel | store failed | type unserved--> DONE
 * </pre>
 */
final class Lifecycle {
  private Lifecycle() {}

  /** Where a submission stands. */
  enum Phase {
    /** Read back from the database at a start; what it becomes is decided by {@link RestartFound}. */
    FOUND,
    /** Waiting in its GPU type's queue. */
    QUEUED,
    /** Its run holds a GPU slot and has not ended it. */
    RUNNING,
    /** Running, and asked to cancel: its run is being stopped; it ends CANCELLED unless its agent ends it first. */
    CANCELLING,
    /** Ended with a result whose timing verdict is still to come from its live run. */
    AWAITING_VERDICT,
    /** Ended; its run is still live (it holds its slot until the run is gone). */
    ENDING,
    /** Ended and its run gone: forgotten once its events are stored. */
    DONE;

    boolean ended() {
      return this == AWAITING_VERDICT || this == ENDING || this == DONE;
    }
  }

  /** Who asked to cancel, and why. */
  record Canceller(String by, String reason) {}

  /**
   * What the tracker knows of a submission: its {@code phase}, its status (the last status event), its mode, the
   * times it was put back in line (a restart, a lost worker), and who asked to cancel it (null: nobody).
   */
  record State(Phase phase, EventType status, Mode mode, int restarts, Canceller cancel) {

    static State queued(Mode mode) {
      return new State(Phase.QUEUED, EventType.IN_QUEUE, mode, 0, null);
    }

    static State found(EventType status, Mode mode, int restarts) {
      return new State(Phase.FOUND, status, mode, restarts, null);
    }

    State to(Phase next) {
      return new State(next, status, mode, restarts, cancel);
    }

    State to(Phase next, EventType newStatus) {
      return new State(next, newStatus.changesStatus() ? newStatus : status, mode, restarts, cancel);
    }

    /** The same, cancelled by {@code by}. */
    State cancelledBy(Canceller by) {
      return new State(phase, status, mode, restarts, by);
    }

    /** Back in line (a re-queue): counted, and no cancel of the run that is gone. */
    State requeued() {
      return new State(Phase.QUEUED, EventType.IN_QUEUE, mode, restarts + 1, null);
    }
  }

  /** What can happen to a submission. */
  sealed interface Input {}

  /** A GPU slot of its type is free for it; {@code backend} runs it. */
  record Dispatch(String backend) implements Input {}

  /** Others ahead of it left or joined: it now stands at {@code position}. */
  record Moved(int position) implements Input {}

  /** Its run reported an event ({@code payload}: the fields encoded, or null). */
  record Event(EventType type, JsonObject fields, String payload) implements Input {}

  /** Its run is over and its processes are gone, ending as {@code outcome} says. */
  record RunEnded(Progress.Outcome outcome, List<String> logTail) implements Input {}

  /** Someone asked to cancel it. */
  record CancelAsked(String by, String reason) implements Input {}

  /**
   * Its events cannot be stored ({@code message} says why): the database was away too long, or refused one for
   * good; {@code endLost}: what it refused was the submission's end, so another end must be stored.
   */
  record StoreFailed(String message, boolean endLost) implements Input {}

  /** Its GPU type cannot run anything now, nor will soon ({@code message} says why). */
  record Unserved(String message) implements Input {}

  /**
   * A start found it unfinished in the database. {@code unserved}: why its GPU type is not served any more (null
   * when it is); {@code verdictPending}: its result was published with a timing verdict that its run, gone with the
   * service, will never send; {@code attach}: how to follow its run again when that run outlives the service
   * (null when it does not).
   */
  record RestartFound(String unserved, boolean verdictPending, RunOrder.Attach attach) implements Input {}

  /** What the tracker is to do, in order. */
  sealed interface Effect {}

  /** How an event is written: appended, or through its own statement (a verdict; a re-queue's restart count). */
  enum Write { APPEND, VERDICT, REQUEUE }

  /** Store then publish an event (after every earlier one of the submission). */
  record Store(EventType type, JsonObject fields, String payload, Write write) implements Effect {

    Store(EventType type, JsonObject fields, Write write) {
      this(type, fields, null, write);
    }

    Store(EventType type, JsonObject fields) {
      this(type, fields, null, Write.APPEND);
    }
  }

  /** Join its queue's tail (nothing stored: the database already says IN_QUEUE). */
  record Enqueue() implements Effect {}

  /** Back in line, at the head or the tail, stored as IN_QUEUE with {@code fields} and its place (a re-queue). */
  record Requeue(boolean first, JsonObject fields) implements Effect {}

  /** Leave its queue. */
  record LeaveQueue() implements Effect {}

  /** Hold a GPU slot of its type. */
  record TakeSlot() implements Effect {}

  /** Start its run on {@code backend}. */
  record Start(String backend) implements Effect {}

  /** Follow again a run an earlier instance of the service started. */
  record Attach(RunOrder.Attach order) implements Effect {}

  /** Stop its run. */
  record Kill() implements Effect {}

  /** Free its GPU slot once its events so far are stored (or given up), and start the next in line. */
  record FreeSlot() implements Effect {}

  /** Forget it once its events so far are stored (or given up). */
  record Forget() implements Effect {}

  /** The input does not apply: nothing changes; {@code why}. */
  record Refused(String why) implements Effect {}

  /** The next state and what to do. */
  record Decision(State next, List<Effect> effects) {

    Decision {
      effects = List.copyOf(effects);
    }

    boolean refused() {
      return effects.size() == 1 && effects.get(0) instanceof Refused;
    }
  }

  /** The one decision: what {@code input} does to a submission in {@code state}. */
  static Decision decide(State state, Input input, long limitSeconds) {
    if (input instanceof Dispatch dispatch) {
      return dispatch(state, dispatch);
    } else if (input instanceof Moved moved) {
      return state.phase() == Phase.QUEUED
          ? new Decision(state, List.of(new Store(EventType.IN_QUEUE, new JsonObject().put("position",
              moved.position()))))
          : refuse(state, "not queued");
    } else if (input instanceof Event event) {
      return event(state, event);
    } else if (input instanceof RunEnded ended) {
      return runEnded(state, ended, limitSeconds);
    } else if (input instanceof CancelAsked cancel) {
      return cancel(state, cancel);
    } else if (input instanceof StoreFailed failed) {
      return storeFailed(state, failed);
    } else if (input instanceof Unserved unserved) {
      return state.phase() == Phase.QUEUED ? end(state, List.of(new LeaveQueue()), EventType.ERROR,
          new JsonObject().put("message", unserved.message()).put("details", ""))
          : refuse(state, "not queued");
    }
    return restartFound(state, (RestartFound) input);
  }

  private static Decision dispatch(State state, Dispatch dispatch) {
    if (state.phase() != Phase.QUEUED) {
      return refuse(state, "not queued");
    }
    return new Decision(state.to(Phase.RUNNING, EventType.PROVISIONING), List.of(new TakeSlot(),
        new Store(EventType.PROVISIONING, new JsonObject().put("backend", dispatch.backend())),
        new Start(dispatch.backend())));
  }

  private static Decision event(State state, Event event) {
    EventType type = event.type();
    Store store = new Store(type, event.fields(), event.payload(),
        type == EventType.VERIFIED ? Write.VERDICT : Write.APPEND);
    switch (state.phase()) {
      case RUNNING, CANCELLING -> {
        if (!type.fromAgent() || type == EventType.VERIFIED || !state.status().accepts(type, state.mode())) {
          return refuse(state, "illegal transition " + state.status() + " -> " + type);
        }
        Phase next = !type.isTerminal(state.mode()) ? state.phase()
            : type == EventType.BENCHMARKED && EventType.timingPending(event.fields()) ? Phase.AWAITING_VERDICT
            : Phase.ENDING;
        return new Decision(state.to(next, type), List.of(store));
      }
      case AWAITING_VERDICT -> {
        return type == EventType.VERIFIED ? new Decision(state.to(Phase.ENDING), List.of(store))
            : refuse(state, "already " + state.status() + ", waiting for its verdict");
      }
      case ENDING, DONE -> {
        return refuse(state, "already " + state.status());
      }
      default -> {
        return refuse(state, "not running");
      }
    }
  }

  private static Decision runEnded(State state, RunEnded ended, long limitSeconds) {
    List<Effect> free = List.of(new FreeSlot(), new Forget());
    switch (state.phase()) {
      case RUNNING -> {
        if (ended.outcome() instanceof Progress.Lost lost && state.restarts() == 0) {
          // Back at the head before its slot is freed: it is the next to start.
          return new Decision(state.requeued(), List.of(new Requeue(true, new JsonObject()
              .put("reason", "worker_lost").put("message", "re-queued: " + lost.why())), new FreeSlot()));
        }
        return endOfRun(state, ended, limitSeconds);
      }
      case CANCELLING -> {
        return new Decision(state.to(Phase.DONE, EventType.CANCELLED), List.of(
            new Store(EventType.CANCELLED, cancelFields(state.cancel())), new FreeSlot(), new Forget()));
      }
      case AWAITING_VERDICT -> {
        // Published before its times were cross-checked, and the run ended without the verdict: say so.
        return new Decision(state.to(Phase.DONE), List.of(
            notChecked("the agent ended before its timing cross-check"), new FreeSlot(), new Forget()));
      }
      case ENDING -> {
        return new Decision(state.to(Phase.DONE), free);
      }
      default -> {
        // A late report of a run that is no more (it was lost and the submission re-queued, or never started).
        return refuse(state, "no run of it is live");
      }
    }
  }

  /** How a run that ended its submission (its agent did not) ends it. */
  private static Decision endOfRun(State state, RunEnded ended, long limitSeconds) {
    String tail = String.join("\n", ended.logTail());
    Progress.Outcome outcome = ended.outcome();
    EventType type;
    JsonObject fields;
    State next = state;
    if (outcome instanceof Progress.TimedOut) {
      type = EventType.TIME_LIMIT_EXCEEDED;
      fields = new JsonObject().put("phase", state.status().name().toLowerCase()).put("limit_seconds", limitSeconds)
          .put("message", "the submission ran past its time limit of " + limitSeconds + " s").put("details", tail);
    } else if (outcome instanceof Progress.Failed failed) {
      type = failed.type().isError() ? failed.type() : EventType.ERROR;
      fields = failed.fields() == null ? new JsonObject() : failed.fields().copy();
      if (!fields.containsKey("details")) {
        fields.put("details", tail);
      }
    } else if (outcome instanceof Progress.Lost lost) {
      type = EventType.ERROR;
      fields = new JsonObject().put("message", lost.why()).put("details", tail);
    } else if (outcome instanceof Progress.NotStarted notStarted) {
      type = EventType.ERROR;
      fields = new JsonObject().put("message", "the agent could not be started").put("details", notStarted.error());
    } else if (outcome instanceof Progress.Killed) {
      // Stopped with nobody asking here: the service ending it (a kill from an earlier decision, a shutdown).
      Canceller system = new Canceller("system", "killed");
      next = state.cancelledBy(system);
      type = EventType.CANCELLED;
      fields = cancelFields(system);
    } else {
      Integer code = ((Progress.Exited) outcome).exitCode();
      boolean crashed = code != null && code != 0;
      type = crashed ? EventType.RUNTIME_ERROR : EventType.ERROR;
      fields = new JsonObject().put("message", crashed
              ? "the agent exited with code " + code + " before reporting a result"
              : "the agent exited without reporting a result")
          .put("exit_code", code).put("details", tail);
    }
    return new Decision(next.to(Phase.DONE, type), List.of(new Store(type, fields), new FreeSlot(), new Forget()));
  }

  private static Decision cancel(State state, CancelAsked asked) {
    Canceller canceller = new Canceller(asked.by(), asked.reason());
    switch (state.phase()) {
      case QUEUED -> {
        return end(state.cancelledBy(canceller), List.of(new LeaveQueue()), EventType.CANCELLED,
            cancelFields(canceller));
      }
      case RUNNING -> {
        return new Decision(state.cancelledBy(canceller).to(Phase.CANCELLING), List.of(new Kill()));
      }
      case CANCELLING -> {
        // The first to ask is the one recorded; a second asker also waits for the run to be gone.
        return new Decision(state, List.of(new Kill()));
      }
      case FOUND -> {
        return refuse(state, "not followed yet");
      }
      default -> {
        return refuse(state, "already " + state.status());
      }
    }
  }

  private static Decision storeFailed(State state, StoreFailed failed) {
    JsonObject fields = new JsonObject().put("message", failed.message());
    switch (state.phase()) {
      case QUEUED -> {
        return end(state, List.of(new LeaveQueue()), EventType.ERROR, fields);
      }
      case RUNNING, CANCELLING -> {
        return new Decision(state.to(Phase.ENDING, EventType.ERROR), List.of(new Store(EventType.ERROR, fields),
            new Kill()));
      }
      case AWAITING_VERDICT, ENDING -> {
        return failed.endLost() ? new Decision(state.to(Phase.ENDING, EventType.ERROR), List.of(
                new Store(EventType.ERROR, fields), new Kill()))
            : refuse(state, "its end is stored already");
      }
      case DONE -> {
        return failed.endLost() ? new Decision(state.to(Phase.DONE, EventType.ERROR), List.of(
                new Store(EventType.ERROR, fields), new Forget()))
            : refuse(state, "its end is stored already");
      }
      default -> {
        return refuse(state, "not followed yet");
      }
    }
  }

  private static Decision restartFound(State state, RestartFound found) {
    if (state.phase() != Phase.FOUND) {
      return refuse(state, "already followed");
    }
    if (found.verdictPending()) {
      return new Decision(state.to(Phase.DONE), List.of(
          notChecked("the service restarted before the timing verdict came"), new Forget()));
    }
    if (found.unserved() != null) {
      return end(state, List.of(), EventType.ERROR, new JsonObject().put("message", found.unserved()));
    }
    if (state.status() == EventType.IN_QUEUE) {
      return new Decision(state.to(Phase.QUEUED), List.of(new Enqueue()));
    }
    if (found.attach() != null) {
      // Its run went on without us: follow it again rather than start over.
      return new Decision(state.to(Phase.RUNNING), List.of(new TakeSlot(), new Attach(found.attach())));
    }
    if (state.restarts() >= 1) {
      return end(state, List.of(), EventType.ERROR, new JsonObject()
          .put("message", "the service restarted twice while this submission ran; giving up"));
    }
    return new Decision(state.requeued(), List.of(new Requeue(false, new JsonObject().put("reason", "restarted"))));
  }

  /** Ends a submission that holds no slot: {@code before}, then the end stored, then forgotten. */
  private static Decision end(State state, List<Effect> before, EventType type, JsonObject fields) {
    List<Effect> effects = new java.util.ArrayList<>(before);
    effects.add(new Store(type, fields));
    effects.add(new Forget());
    return new Decision(state.to(Phase.DONE, type), effects);
  }

  private static Decision refuse(State state, String why) {
    return new Decision(state, List.of(new Refused(why)));
  }

  /** The verdict of a result whose times were to be checked, and never will be. */
  private static Store notChecked(String reason) {
    return new Store(EventType.VERIFIED, new JsonObject().put("timing", new JsonObject()
        .put("status", "not_checked").put("reason", reason)), Write.VERDICT);
  }

  /** The fields of a CANCELLED. */
  static JsonObject cancelFields(Canceller canceller) {
    return new JsonObject().put("cancelled_by", canceller.by()).put("reason", canceller.reason())
        .put("message", "cancelled by " + canceller.by() + " (" + canceller.reason() + ")");
  }
}
