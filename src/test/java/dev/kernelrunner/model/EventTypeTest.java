package dev.kernelrunner.model;

import static dev.kernelrunner.model.EventType.*;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.vertx.core.json.JsonObject;
import org.junit.jupiter.api.Test;

class EventTypeTest {

  @Test
  void terminalDependsOnMode() {
    assertTrue(BENCHMARKED.isTerminal(Mode.BENCHMARK));
    assertTrue(CHECKED.isTerminal(Mode.CHECK));
    assertFalse(CHECKED.isTerminal(Mode.BENCHMARK));
    for (EventType error : new EventType[] {COMPILE_ERROR, WRONG_ANSWER, RUNTIME_ERROR, TIME_LIMIT_EXCEEDED, ERROR,
        CANCELLED}) {
      assertTrue(error.isTerminal(Mode.CHECK) && error.isTerminal(Mode.BENCHMARK), error.name());
    }
  }

  @Test
  void nothingFollowsATerminalEventButTheTimingVerdictOfABenchmark() {
    assertTrue(BENCHMARKED.accepts(VERIFIED, Mode.BENCHMARK));
    assertFalse(PROFILED.accepts(VERIFIED, Mode.PROFILE));
    assertFalse(CHECKED.accepts(VERIFIED, Mode.CHECK));
    assertFalse(BENCHMARKING.accepts(VERIFIED, Mode.BENCHMARK));
    for (EventType next : values()) {
      assertTrue(next == VERIFIED || !BENCHMARKED.accepts(next, Mode.BENCHMARK), next.name());
      assertFalse(CANCELLED.accepts(next, Mode.BENCHMARK), next.name());
      assertFalse(CHECKED.accepts(next, Mode.CHECK), next.name());
    }
  }

  @Test
  void aStreamEndsAfterTheVerdictWhenTheTimesWerePending() {
    JsonObject pending = new JsonObject().put("verification", new JsonObject().put("timing",
        new JsonObject().put("status", "pending")));
    JsonObject checked = new JsonObject().put("verification", new JsonObject().put("timing",
        new JsonObject().put("status", "verified")));
    assertFalse(BENCHMARKED.endsStream(pending, Mode.BENCHMARK));
    assertTrue(BENCHMARKED.endsStream(checked, Mode.BENCHMARK));
    assertTrue(BENCHMARKED.endsStream(new JsonObject(), Mode.BENCHMARK));
    assertTrue(VERIFIED.endsStream(new JsonObject(), Mode.BENCHMARK));
    assertFalse(CHECKING.endsStream(pending, Mode.BENCHMARK));
    assertTrue(EventType.timingPending(pending));
    assertFalse(EventType.timingPending(null));
  }

  @Test
  void lifecycleMovesForwardOnly() {
    assertTrue(IN_QUEUE.accepts(PROVISIONING, Mode.BENCHMARK));
    assertTrue(PROVISIONING.accepts(COMPILING, Mode.BENCHMARK));
    assertTrue(COMPILING.accepts(COMPILE_ERROR, Mode.BENCHMARK));
    assertTrue(CHECKING.accepts(TEST_RESULT, Mode.BENCHMARK));
    assertTrue(CHECKING.accepts(WRONG_ANSWER, Mode.BENCHMARK));
    assertTrue(CHECKED.accepts(BENCHMARKING, Mode.BENCHMARK));
    assertTrue(BENCHMARKING.accepts(BENCHMARK_RESULT, Mode.BENCHMARK));
    assertTrue(BENCHMARKING.accepts(BENCHMARKED, Mode.BENCHMARK));
    assertFalse(BENCHMARKING.accepts(COMPILING, Mode.BENCHMARK));
    assertFalse(COMPILING.accepts(TEST_RESULT, Mode.BENCHMARK));
    assertFalse(CHECKING.accepts(BENCHMARK_RESULT, Mode.BENCHMARK));
    assertFalse(CHECKED.accepts(BENCHMARKING, Mode.CHECK));
    assertFalse(COMPILING.accepts(IN_QUEUE, Mode.BENCHMARK));
    assertFalse(IN_QUEUE.fromAgent() || CANCELLED.fromAgent());
  }

  @Test
  void profileModeGoesFromCheckedThroughProfilingToProfiled() {
    assertTrue(CHECKED.accepts(PROFILING, Mode.PROFILE));
    assertTrue(PROFILING.accepts(PROFILE_RESULT, Mode.PROFILE));
    assertTrue(PROFILING.accepts(PROFILED, Mode.PROFILE));
    assertTrue(PROFILED.isTerminal(Mode.PROFILE));
    assertFalse(CHECKED.isTerminal(Mode.PROFILE));
    // Each mode keeps to its own phases: no profile in a benchmark, no benchmark in a profile.
    assertFalse(CHECKED.accepts(PROFILING, Mode.BENCHMARK));
    assertFalse(CHECKED.accepts(PROFILED, Mode.CHECK));
    assertFalse(CHECKED.accepts(BENCHMARKING, Mode.PROFILE));
    assertFalse(CHECKING.accepts(PROFILE_RESULT, Mode.PROFILE));
    for (EventType next : values()) {
      assertFalse(PROFILED.accepts(next, Mode.PROFILE), next.name());
    }
  }

  @Test
  void aBaselineJobGoesThroughBenchmarkingToBaselinedAndNothingElseEndsOne() {
    assertTrue(PROVISIONING.accepts(BENCHMARKING, Mode.BASELINE));
    assertTrue(BENCHMARKING.accepts(BENCHMARK_RESULT, Mode.BASELINE));
    assertTrue(BENCHMARKING.accepts(BASELINED, Mode.BASELINE));
    assertTrue(BENCHMARKING.accepts(ERROR, Mode.BASELINE));
    assertTrue(BASELINED.isTerminal(Mode.BASELINE));
    assertFalse(BASELINED.isTerminal(Mode.BENCHMARK) || BASELINED.isTerminal(Mode.CHECK));
    assertFalse(BENCHMARKING.accepts(BENCHMARKED, Mode.BASELINE), "a baseline is no result to rank");
    assertFalse(BENCHMARKING.accepts(BASELINED, Mode.BENCHMARK), "a submission cannot end as a baseline");
    assertFalse(BENCHMARKING.accepts(VERIFIED, Mode.BASELINE));
    for (EventType next : values()) {
      assertFalse(BASELINED.accepts(next, Mode.BASELINE), next.name());
    }
    assertFalse(Mode.BASELINE.submittable());
    assertTrue(Mode.BENCHMARK.submittable() && Mode.CHECK.submittable() && Mode.PROFILE.submittable());
  }

  @Test
  void reportPiecesAreNeverLifecycleEvents() {
    for (EventType status : values()) {
      for (Mode mode : Mode.values()) {
        assertFalse(status.accepts(PROFILE_REPORT, mode), status + " " + mode);
      }
    }
  }
}
