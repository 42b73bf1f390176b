package dev.kernelrunner.workers;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import java.util.List;
import org.junit.jupiter.api.Test;

/** Which free worker gets a job: health first, then the spread of work. */
class WorkerChoiceTest {
  private static WorkerChoice.Candidate worker(String id, boolean quarantined, int losses, boolean restarted,
                                               boolean lostThis, int done) {
    return new WorkerChoice.Candidate(id, quarantined, losses, restarted, lostThis, false, done);
  }

  @Test
  void aPlaceOnAnIdleGpuComesBeforeOneWhoseGpuRunsAJob() {
    WorkerChoice.Candidate besideAJob = new WorkerChoice.Candidate("h:0:r@2", false, 0, false, false, true, 0);
    WorkerChoice.Candidate idle = new WorkerChoice.Candidate("h:1:r", false, 0, false, false, false, 5);
    assertEquals("h:1:r", WorkerChoice.pick(List.of(besideAJob, idle)), "its job would wait for the device");
    assertEquals("h:0:r@2", WorkerChoice.pick(List.of(besideAJob)), "still taken when it is the only one free");
    WorkerChoice.Candidate losing = new WorkerChoice.Candidate("x:0:r", false, 1, false, false, false, 0);
    assertEquals("h:0:r@2", WorkerChoice.pick(List.of(besideAJob, losing)), "health comes first");
  }

  @Test
  void healthComesBeforeTheSpreadOfWork() {
    WorkerChoice.Candidate busyHealthy = worker("healthy", false, 0, false, false, 9);
    assertEquals("healthy", WorkerChoice.pick(List.of(worker("looping", false, 0, true, false, 0), busyHealthy)),
        "a machine whose worker just came back under a new id waits behind a healthy one");
    assertEquals("healthy", WorkerChoice.pick(List.of(worker("losing", false, 1, false, false, 0), busyHealthy)));
    assertEquals("healthy", WorkerChoice.pick(List.of(worker("lost-it", false, 0, false, true, 0), busyHealthy)),
        "a re-queued job goes to another machine when one is free");
    assertEquals("fresh", WorkerChoice.pick(List.of(worker("fresh", false, 0, false, false, 1), busyHealthy)),
        "among healthy ones, the one with fewer jobs done");
    assertEquals("looping", WorkerChoice.pick(List.of(worker("looping", false, 2, true, true, 0))),
        "an unhealthy one still serves when it is the only one");
  }

  @Test
  void aQuarantinedWorkerGetsNothing() {
    assertNull(WorkerChoice.pick(List.of(worker("q", true, 3, false, false, 0))));
    assertNull(WorkerChoice.pick(List.of()));
    assertEquals("ok", WorkerChoice.pick(List.of(worker("q", true, 0, false, false, 0),
        worker("ok", false, 5, true, true, 99))));
  }
}
