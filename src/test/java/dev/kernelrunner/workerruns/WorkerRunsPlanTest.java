package dev.kernelrunner.workerruns;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.kernelrunner.workerruns.WorkerRunsPlan.Decision;
import dev.kernelrunner.workerruns.WorkerRunsPlan.Run;
import dev.kernelrunner.workerruns.WorkerRunsPlan.Worker;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

class WorkerRunsPlanTest {
  private static final Duration IDLE = Duration.ofMinutes(10);
  private static final Duration CONNECT = Duration.ofMinutes(5);
  private static final long NOW = Duration.ofHours(1).toNanos();

  private static Run run(String name, boolean active, Worker worker, Duration age, Duration idle) {
    return new Run(name, active, worker, NOW - age.toNanos(), idle == null ? 0 : NOW - idle.toNanos());
  }

  private static Decision decide(int queued, int max, Run... runs) {
    return WorkerRunsPlan.decide(queued, List.of(runs), max, IDLE, CONNECT, NOW);
  }

  @Test
  void workThatNoFreeOrStartingWorkerWillTakeStartsRunsUpToTheLimit() {
    assertEquals(2, decide(2, 4).start());
    assertEquals(2, decide(5, 2).start(), "never past AMD_FLEET_MAX_NODES");
    assertEquals(0, decide(1, 4, run("a", true, Worker.IDLE, Duration.ofMinutes(1), Duration.ZERO)).start(),
        "a free worker takes it");
    assertEquals(1, decide(2, 4, run("a", true, Worker.NOT_CONNECTED, Duration.ofMinutes(1), null)).start(),
        "one is on its way");
    assertEquals(0, decide(3, 2, run("a", true, Worker.BUSY, Duration.ofMinutes(1), null),
        run("b", true, Worker.BUSY, Duration.ofMinutes(1), null)).start());
    assertEquals(0, decide(0, 4).start());
  }

  @Test
  void idleRunsStopOnlyWhileNothingWaits() {
    Run idle = run("a", true, Worker.IDLE, Duration.ofHours(1), Duration.ofMinutes(11));
    Run fresh = run("b", true, Worker.IDLE, Duration.ofHours(1), Duration.ofMinutes(9));
    assertEquals(List.of("a"), decide(0, 4, idle, fresh).stop());
    assertEquals(List.of(), decide(1, 4, idle, fresh).stop());
    assertEquals(List.of(), WorkerRunsPlan.decide(0, List.of(idle), 4, null, CONNECT, NOW).stop(), "idle: off");
  }

  @Test
  void deadRunsAreForgottenAndReplacedAndOnesThatNeverConnectAreStopped() {
    Decision decision = decide(1, 2, run("dead", false, Worker.NOT_CONNECTED, Duration.ofMinutes(1), null),
        run("lost", true, Worker.NOT_CONNECTED, Duration.ofMinutes(6), null));
    assertEquals(List.of("dead"), decision.forget());
    assertEquals(List.of("lost"), decision.stop());
    assertEquals(1, decision.start(), "the waiting job gets a new run");
  }
}
