package dev.kernelrunner.tracker;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;

import dev.kernelrunner.model.EventType;
import dev.kernelrunner.model.Progress;
import io.vertx.core.json.JsonObject;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Every way a run can end, against every state of its submission that changes the answer. */
class RunEndTest {
  private static final RunEnd.State RUNNING = new RunEnd.State(false, false, null, null, 0, EventType.COMPILING);

  private static Progress.Exit exit(Integer code, boolean killed, boolean timedOut, String startError,
                                    EventType failure, String lost) {
    return new Progress.Exit("s", code, killed, timedOut, false, startError, List.of("last line"), failure,
        failure == null ? null : new JsonObject().put("message", "the backend says"), lost);
  }

  private static RunEnd.End end(RunEnd.State state, Progress.Exit exit) {
    return assertInstanceOf(RunEnd.End.class, RunEnd.decide(state, exit, 900));
  }

  @Test
  void aSubmissionThatEndedAlreadyIsNotEndedAgainAndALostVerdictIsSaid() {
    RunEnd.State ended = new RunEnd.State(true, false, null, null, 0, EventType.BENCHMARKED);
    RunEnd.State pending = new RunEnd.State(true, true, null, null, 0, EventType.BENCHMARKED);
    for (Progress.Exit exit : List.of(exit(0, false, false, null, null, null), exit(1, true, true, "x",
        EventType.ERROR, "machine gone"))) {
      assertEquals(new RunEnd.Ended(false), RunEnd.decide(ended, exit, 900));
      assertEquals(new RunEnd.Ended(true), RunEnd.decide(pending, exit, 900));
    }
  }

  @Test
  void aLostRunIsRequeuedOnceUnlessCancelledOrPastItsLimit() {
    Progress.Exit lost = exit(null, false, false, null, null, "the worker went away");
    assertEquals(new RunEnd.Requeue("the worker went away"), RunEnd.decide(RUNNING, lost, 900));
    RunEnd.State again = new RunEnd.State(false, false, null, null, 1, EventType.COMPILING);
    assertEquals(EventType.ERROR, end(again, lost).type(), "a second loss ends it");
    RunEnd.State cancelling = new RunEnd.State(false, false, "ann", "user_requested", 0, EventType.COMPILING);
    assertEquals(EventType.CANCELLED, end(cancelling, lost).type());
    assertEquals(EventType.TIME_LIMIT_EXCEEDED, end(RUNNING, exit(null, true, true, null, null, "gone")).type());
  }

  @Test
  void whatEndsANotYetEndedSubmissionInOrderOfPrecedence() {
    RunEnd.State cancelling = new RunEnd.State(false, false, "ann", "user_requested", 0, EventType.CHECKING);
    RunEnd.End cancelled = end(cancelling, exit(137, true, true, null, EventType.ERROR, null));
    assertEquals(EventType.CANCELLED, cancelled.type(), "a cancel asked for wins over the kill and the limit");
    assertEquals("ann", cancelled.cancelledBy());
    assertEquals("cancelled by ann (user_requested)", cancelled.fields().getString("message"));

    RunEnd.End timedOut = end(RUNNING, exit(137, true, true, null, EventType.ERROR, null));
    assertEquals(EventType.TIME_LIMIT_EXCEEDED, timedOut.type());
    assertEquals("compiling", timedOut.fields().getString("phase"));
    assertEquals(900, timedOut.fields().getLong("limit_seconds"));

    RunEnd.End failed = end(RUNNING, exit(1, false, false, "not started", EventType.RUNTIME_ERROR, null));
    assertEquals(EventType.RUNTIME_ERROR, failed.type(), "the backend's own failure");
    assertEquals("the backend says", failed.fields().getString("message"));
    assertEquals("last line", failed.fields().getString("details"));
    assertEquals(EventType.ERROR, end(RUNNING, exit(1, false, false, null, EventType.BENCHMARKED, null)).type(),
        "a failure that is not an error type is an ERROR");

    assertEquals("the agent could not be started",
        end(RUNNING, exit(null, false, false, "no such file", null, null)).fields().getString("message"));

    RunEnd.End killed = end(RUNNING, exit(137, true, false, null, null, null));
    assertEquals(EventType.CANCELLED, killed.type());
    assertEquals("system", killed.cancelledBy());
    assertEquals("killed", killed.cancelReason());

    RunEnd.End crashed = end(RUNNING, exit(3, false, false, null, null, null));
    assertEquals(EventType.RUNTIME_ERROR, crashed.type());
    assertEquals(3, crashed.fields().getInteger("exit_code"));

    RunEnd.End silent = end(RUNNING, exit(0, false, false, null, null, null));
    assertEquals(EventType.ERROR, silent.type());
    assertEquals("the agent exited without reporting a result", silent.fields().getString("message"));
  }
}
