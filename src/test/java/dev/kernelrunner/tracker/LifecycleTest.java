package dev.kernelrunner.tracker;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.kernelrunner.backend.Backend;
import dev.kernelrunner.backend.RunOrder;
import dev.kernelrunner.model.EventType;
import dev.kernelrunner.model.Mode;
import dev.kernelrunner.model.Progress;
import io.vertx.core.json.JsonObject;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/**
 * {@link Lifecycle#decide} over every (phase, input) pair, as a table: the phase and status it starts from, the
 * input, and the phase, status and effects it must give. Rows name an input by its kind ({@code event}) and, for
 * the variants that matter, a detail ({@code event:BENCHMARKED+pending}); the first row of each pair uses the plain
 * kind. A status {@code X^1} means the submission was put back in line once already.
 */
class LifecycleTest {
  private static final String TABLE = """
    # phase          status       input                        phase/status effects
    FOUND            COMPILING    dispatch                  -> refused
    FOUND            COMPILING    moved                     -> refused
    FOUND            COMPILING    event                     -> refused
    FOUND            COMPILING    ended                     -> refused
    FOUND            COMPILING    cancel                    -> refused
    FOUND            COMPILING    store-failed              -> refused
    FOUND            COMPILING    unserved                  -> refused
    FOUND            COMPILING    restart                   -> QUEUED/IN_QUEUE              Requeue(tail)
    FOUND            COMPILING^1  restart                   -> DONE/ERROR                   Store(ERROR) Forget
    FOUND            IN_QUEUE     restart                   -> QUEUED/IN_QUEUE              Enqueue
    FOUND            COMPILING    restart:attach            -> RUNNING/COMPILING            TakeSlot Attach
    FOUND            COMPILING    restart:unserved          -> DONE/ERROR                   Store(ERROR) Forget
    FOUND            BENCHMARKED  restart:verdict           -> DONE/BENCHMARKED             Store(VERIFIED,VERDICT) Forget
    QUEUED           IN_QUEUE     dispatch                  -> RUNNING/PROVISIONING         TakeSlot Store(PROVISIONING) Start
    QUEUED           IN_QUEUE     moved                     -> QUEUED/IN_QUEUE              Store(IN_QUEUE)
    QUEUED           IN_QUEUE     event                     -> refused
    QUEUED           IN_QUEUE     ended                     -> refused
    QUEUED           IN_QUEUE     cancel                    -> DONE/CANCELLED               LeaveQueue Store(CANCELLED) Forget
    QUEUED           IN_QUEUE     store-failed              -> DONE/ERROR                   LeaveQueue Store(ERROR) Forget
    QUEUED           IN_QUEUE     unserved                  -> DONE/ERROR                   LeaveQueue Store(ERROR) Forget
    QUEUED           IN_QUEUE     restart                   -> refused
    RUNNING          COMPILING    dispatch                  -> refused
    RUNNING          COMPILING    moved                     -> refused
    RUNNING          COMPILING    event                     -> RUNNING/CHECKING             Store(CHECKING)
    RUNNING          BENCHMARKING event:BENCHMARKED         -> ENDING/BENCHMARKED           Store(BENCHMARKED)
    RUNNING          BENCHMARKING event:BENCHMARKED+pending -> AWAITING_VERDICT/BENCHMARKED Store(BENCHMARKED)
    RUNNING          CHECKING     event:WRONG_ANSWER        -> ENDING/WRONG_ANSWER          Store(WRONG_ANSWER)
    RUNNING          CHECKING     event:TEST_RESULT         -> RUNNING/CHECKING             Store(TEST_RESULT)
    RUNNING          CHECKING     event:COMPILING           -> refused
    RUNNING          COMPILING    event:VERIFIED            -> refused
    RUNNING          COMPILING    event:CANCELLED           -> refused
    RUNNING          COMPILING    event:IN_QUEUE            -> refused
    RUNNING          COMPILING    ended                     -> DONE/ERROR                   Store(ERROR) FreeSlot Forget
    RUNNING          COMPILING    ended:crashed             -> DONE/RUNTIME_ERROR           Store(RUNTIME_ERROR) FreeSlot Forget
    RUNNING          COMPILING    ended:failed              -> DONE/COMPILE_ERROR           Store(COMPILE_ERROR) FreeSlot Forget
    RUNNING          COMPILING    ended:not-started         -> DONE/ERROR                   Store(ERROR) FreeSlot Forget
    RUNNING          COMPILING    ended:killed              -> DONE/CANCELLED               Store(CANCELLED) FreeSlot Forget
    RUNNING          COMPILING    ended:timed-out           -> DONE/TIME_LIMIT_EXCEEDED     Store(TIME_LIMIT_EXCEEDED) FreeSlot Forget
    RUNNING          COMPILING    ended:lost                -> QUEUED/IN_QUEUE              Requeue(head) FreeSlot
    RUNNING          COMPILING^1  ended:lost                -> DONE/ERROR                   Store(ERROR) FreeSlot Forget
    RUNNING          COMPILING    cancel                    -> CANCELLING/COMPILING         Kill
    RUNNING          COMPILING    store-failed              -> ENDING/ERROR                 Store(ERROR) Kill
    RUNNING          COMPILING    unserved                  -> refused
    RUNNING          COMPILING    restart                   -> refused
    CANCELLING       COMPILING    dispatch                  -> refused
    CANCELLING       COMPILING    moved                     -> refused
    CANCELLING       COMPILING    event                     -> CANCELLING/CHECKING          Store(CHECKING)
    CANCELLING       CHECKING     event:WRONG_ANSWER        -> ENDING/WRONG_ANSWER          Store(WRONG_ANSWER)
    CANCELLING       COMPILING    ended                     -> DONE/CANCELLED               Store(CANCELLED) FreeSlot Forget
    CANCELLING       COMPILING    ended:lost                -> DONE/CANCELLED               Store(CANCELLED) FreeSlot Forget
    CANCELLING       COMPILING    ended:timed-out           -> DONE/CANCELLED               Store(CANCELLED) FreeSlot Forget
    CANCELLING       COMPILING    cancel                    -> CANCELLING/COMPILING         Kill
    CANCELLING       COMPILING    store-failed              -> ENDING/ERROR                 Store(ERROR) Kill
    CANCELLING       COMPILING    unserved                  -> refused
    CANCELLING       COMPILING    restart                   -> refused
    AWAITING_VERDICT BENCHMARKED  dispatch                  -> refused
    AWAITING_VERDICT BENCHMARKED  moved                     -> refused
    AWAITING_VERDICT BENCHMARKED  event                     -> refused
    AWAITING_VERDICT BENCHMARKED  event:VERIFIED            -> ENDING/BENCHMARKED           Store(VERIFIED,VERDICT)
    AWAITING_VERDICT BENCHMARKED  ended                     -> DONE/BENCHMARKED             Store(VERIFIED,VERDICT) FreeSlot Forget
    AWAITING_VERDICT BENCHMARKED  cancel                    -> refused
    AWAITING_VERDICT BENCHMARKED  store-failed              -> refused
    AWAITING_VERDICT BENCHMARKED  store-failed:end-lost     -> ENDING/ERROR                 Store(ERROR) Kill
    AWAITING_VERDICT BENCHMARKED  unserved                  -> refused
    AWAITING_VERDICT BENCHMARKED  restart                   -> refused
    ENDING           WRONG_ANSWER dispatch                  -> refused
    ENDING           WRONG_ANSWER moved                     -> refused
    ENDING           WRONG_ANSWER event                     -> refused
    ENDING           BENCHMARKED  event:VERIFIED            -> refused
    ENDING           WRONG_ANSWER ended                     -> DONE/WRONG_ANSWER            FreeSlot Forget
    ENDING           WRONG_ANSWER ended:lost                -> DONE/WRONG_ANSWER            FreeSlot Forget
    ENDING           WRONG_ANSWER cancel                    -> refused
    ENDING           WRONG_ANSWER store-failed              -> refused
    ENDING           WRONG_ANSWER store-failed:end-lost     -> ENDING/ERROR                 Store(ERROR) Kill
    ENDING           WRONG_ANSWER unserved                  -> refused
    ENDING           WRONG_ANSWER restart                   -> refused
    DONE             WRONG_ANSWER dispatch                  -> refused
    DONE             WRONG_ANSWER moved                     -> refused
    DONE             WRONG_ANSWER event                     -> refused
    DONE             BENCHMARKED  event:VERIFIED            -> refused
    DONE             WRONG_ANSWER ended                     -> refused
    DONE             WRONG_ANSWER cancel                    -> refused
    DONE             WRONG_ANSWER store-failed              -> refused
    DONE             WRONG_ANSWER store-failed:end-lost     -> DONE/ERROR                   Store(ERROR) Forget
    DONE             WRONG_ANSWER unserved                  -> refused
    DONE             WRONG_ANSWER restart                   -> refused
    """;

  private static final Lifecycle.Canceller ANN = new Lifecycle.Canceller("ann", "owner");

  private record Row(int line, Lifecycle.State state, String input, String expected) {}

  private static List<Row> rows() {
    List<Row> rows = new ArrayList<>();
    String[] lines = TABLE.split("\n");
    for (int i = 0; i < lines.length; i++) {
      String line = lines[i].strip();
      if (line.isEmpty() || line.startsWith("#")) {
        continue;
      }
      String[] sides = line.split("->");
      String[] left = sides[0].strip().split("\\s+");
      Lifecycle.Phase phase = Lifecycle.Phase.valueOf(left[0]);
      String[] status = left[1].split("\\^");
      int restarts = status.length > 1 ? Integer.parseInt(status[1]) : 0;
      Lifecycle.Canceller cancel = phase == Lifecycle.Phase.CANCELLING ? ANN : null;
      rows.add(new Row(i + 1, new Lifecycle.State(phase, EventType.valueOf(status[0]), Mode.BENCHMARK, restarts,
          cancel), left[2], sides[1].strip().replaceAll("\\s+", " ")));
    }
    return rows;
  }

  /** The input a row names. */
  private static Lifecycle.Input input(String name) {
    String[] parts = name.split(":", 2);
    String detail = parts.length > 1 ? parts[1] : "";
    List<String> tail = List.of("last line");
    return switch (parts[0]) {
      case "dispatch" -> new Lifecycle.Dispatch("local");
      case "moved" -> new Lifecycle.Moved(3);
      case "event" -> {
        EventType type = detail.isEmpty() ? EventType.CHECKING : EventType.valueOf(detail.replace("+pending", ""));
        JsonObject fields = detail.endsWith("+pending") ? pending() : new JsonObject();
        yield new Lifecycle.Event(type, fields, null);
      }
      case "ended" -> new Lifecycle.RunEnded(switch (detail) {
        case "" -> new Progress.Exited(0);
        case "crashed" -> new Progress.Exited(3);
        case "failed" -> new Progress.Failed(EventType.COMPILE_ERROR, new JsonObject().put("message", "nvcc: 1"));
        case "not-started" -> new Progress.NotStarted("no such file");
        case "killed" -> new Progress.Killed();
        case "timed-out" -> new Progress.TimedOut();
        case "lost" -> new Progress.Lost("the worker went away");
        default -> throw new IllegalArgumentException(detail);
      }, tail);
      case "cancel" -> new Lifecycle.CancelAsked("bob", "admin");
      case "store-failed" -> new Lifecycle.StoreFailed("the database is away", detail.equals("end-lost"));
      case "unserved" -> new Lifecycle.Unserved("no worker for this GPU type");
      case "restart" -> new Lifecycle.RestartFound(detail.equals("unserved") ? "not served" : null,
          detail.equals("verdict"), detail.equals("attach") ? new RunOrder.Attach("dstack",
              new Backend.Resume("s", "run-s", 10, null, "key", Mode.BENCHMARK, "MI300X")) : null);
      default -> throw new IllegalArgumentException(name);
    };
  }

  private static JsonObject pending() {
    return new JsonObject().put("verification", new JsonObject().put("timing",
        new JsonObject().put("status", "pending")));
  }

  /** A decision as the table writes it. */
  private static String describe(Lifecycle.State before, Lifecycle.Decision decision) {
    if (decision.refused()) {
      return "refused";
    }
    String effects = decision.effects().stream().map(effect -> {
      if (effect instanceof Lifecycle.Store store) {
        return "Store(" + store.type() + (store.write() == Lifecycle.Write.APPEND ? "" : "," + store.write()) + ")";
      } else if (effect instanceof Lifecycle.Requeue requeue) {
        return "Requeue(" + (requeue.first() ? "head" : "tail") + ")";
      }
      return effect.getClass().getSimpleName();
    }).collect(Collectors.joining(" "));
    return decision.next().phase() + "/" + decision.next().status() + " " + effects;
  }

  @Test
  void everyPhaseAndInputPairDecidesAsTheTableSays() {
    List<String> wrong = new ArrayList<>();
    Set<String> covered = new HashSet<>();
    for (Row row : rows()) {
      Lifecycle.Decision decision = Lifecycle.decide(row.state(), input(row.input()), 900);
      String got = describe(row.state(), decision);
      if (!got.equals(row.expected())) {
        wrong.add("line " + row.line() + " " + row.state().phase() + " " + row.input() + ": expected "
            + row.expected() + ", got " + got);
      }
      if (decision.refused()) {
        assertEquals(row.state(), decision.next(), "a refused input changes nothing (line " + row.line() + ")");
      }
      covered.add(row.state().phase() + " " + row.input().split(":")[0]);
    }
    assertEquals(List.of(), wrong);
    Set<String> missing = new java.util.TreeSet<>();
    for (Lifecycle.Phase phase : EnumSet.allOf(Lifecycle.Phase.class)) {
      for (String kind : List.of("dispatch", "moved", "event", "ended", "cancel", "store-failed", "unserved",
          "restart")) {
        if (!covered.contains(phase + " " + kind)) {
          missing.add(phase + " " + kind);
        }
      }
    }
    assertEquals(Set.of(), missing, "every (phase, input) pair is in the table");
    // Every input kind of the sealed set is one the table names.
    assertEquals(8, Lifecycle.Input.class.getPermittedSubclasses().length);
  }

  @Test
  void aCancelIsRecordedByItsFirstAskerAndEndsWithTheirName() {
    Lifecycle.State running = new Lifecycle.State(Lifecycle.Phase.RUNNING, EventType.CHECKING, Mode.BENCHMARK, 0,
        null);
    Lifecycle.State cancelling = Lifecycle.decide(running, new Lifecycle.CancelAsked("ann", "owner"), 900).next();
    assertEquals(ANN, cancelling.cancel());
    Lifecycle.State again = Lifecycle.decide(cancelling, new Lifecycle.CancelAsked("bob", "admin"), 900).next();
    assertEquals(ANN, again.cancel(), "the first asker is the one recorded");
    Lifecycle.Decision ended = Lifecycle.decide(again, new Lifecycle.RunEnded(new Progress.TimedOut(), List.of()),
        900);
    Lifecycle.Store store = assertInstanceOf(Lifecycle.Store.class, ended.effects().get(0));
    assertEquals("cancelled by ann (owner)", store.fields().getString("message"));
    assertEquals(ANN, ended.next().cancel(), "the tracker stores who cancelled from the state");

    Lifecycle.Decision queued = Lifecycle.decide(Lifecycle.State.queued(Mode.CHECK),
        new Lifecycle.CancelAsked("ann", "owner"), 900);
    assertEquals(ANN, queued.next().cancel());
  }

  @Test
  void aRunThatEndsItsSubmissionSaysHow() {
    Lifecycle.State running = new Lifecycle.State(Lifecycle.Phase.RUNNING, EventType.COMPILING, Mode.BENCHMARK, 0,
        null);
    JsonObject timedOut = stored(running, new Progress.TimedOut());
    assertEquals("compiling", timedOut.getString("phase"));
    assertEquals(900, timedOut.getLong("limit_seconds"));
    assertEquals("last line", timedOut.getString("details"));

    JsonObject failed = stored(running, new Progress.Failed(EventType.RUNTIME_ERROR,
        new JsonObject().put("message", "the backend says")));
    assertEquals("the backend says", failed.getString("message"));
    assertEquals("last line", failed.getString("details"), "the log tail, when the backend gave no details");
    Lifecycle.Decision notAnError = Lifecycle.decide(running, new Lifecycle.RunEnded(
        new Progress.Failed(EventType.BENCHMARKED, new JsonObject()), List.of()), 900);
    assertEquals(EventType.ERROR, notAnError.next().status(), "a failure that is not an error type is an ERROR");

    assertEquals("the agent could not be started", stored(running, new Progress.NotStarted("x")).getString("message"));
    JsonObject killed = stored(running, new Progress.Killed());
    assertEquals("system", killed.getString("cancelled_by"));
    assertEquals("killed", killed.getString("reason"));
    assertEquals(3, stored(running, new Progress.Exited(3)).getInteger("exit_code"));
    assertEquals("the agent exited without reporting a result",
        stored(running, new Progress.Exited(0)).getString("message"));
    assertEquals("the worker went away", stored(new Lifecycle.State(Lifecycle.Phase.RUNNING, EventType.COMPILING,
        Mode.BENCHMARK, 1, null), new Progress.Lost("the worker went away")).getString("message"));
  }

  @Test
  void aRequeueCountsAndForgetsTheCancelOfTheRunThatWasLost() {
    Lifecycle.State running = new Lifecycle.State(Lifecycle.Phase.RUNNING, EventType.CHECKING, Mode.PROFILE, 0,
        null);
    Lifecycle.Decision lost = Lifecycle.decide(running, new Lifecycle.RunEnded(new Progress.Lost("gone"),
        List.of()), 900);
    assertEquals(new Lifecycle.State(Lifecycle.Phase.QUEUED, EventType.IN_QUEUE, Mode.PROFILE, 1, null),
        lost.next());
    Lifecycle.Requeue requeue = assertInstanceOf(Lifecycle.Requeue.class, lost.effects().get(0));
    assertEquals(Map.of("reason", "worker_lost", "message", "re-queued: gone"), requeue.fields().getMap());
    Lifecycle.Decision restarted = Lifecycle.decide(Lifecycle.State.found(EventType.CHECKING, Mode.CHECK, 0),
        new Lifecycle.RestartFound(null, false, null), 900);
    assertEquals(1, restarted.next().restarts());
    assertTrue(restarted.next().phase() == Lifecycle.Phase.QUEUED);
  }

  private static JsonObject stored(Lifecycle.State state, Progress.Outcome outcome) {
    Lifecycle.Decision decision = Lifecycle.decide(state, new Lifecycle.RunEnded(outcome, List.of("last line")), 900);
    return assertInstanceOf(Lifecycle.Store.class, decision.effects().get(0)).fields();
  }
}
