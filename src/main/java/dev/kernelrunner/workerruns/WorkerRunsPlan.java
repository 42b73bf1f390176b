package dev.kernelrunner.workerruns;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * What to do with the worker runs of one GPU type, a pure function of what is seen now: how many to start, which
 * to stop, which to forget. A run is forgotten once dstack no longer runs it (it ended or died); one whose worker
 * never connected within {@code connectWithin} is stopped; idle workers beyond {@code idleAfter} are stopped while
 * nothing waits; new runs are started while work waits that neither a free worker nor a starting run will take,
 * up to {@code maxRuns}.
 */
final class WorkerRunsPlan {
  private WorkerRunsPlan() {}

  /** Where a run's worker stands. */
  enum Worker { NOT_CONNECTED, IDLE, BUSY }

  /** One run: whether dstack still runs it, its worker, since when it ran, since when its worker is idle. */
  record Run(String name, boolean active, Worker worker, long startedAtNanos, long idleSinceNanos) {}

  record Decision(int start, List<String> stop, List<String> forget) {}

  static Decision decide(int queued, List<Run> runs, int maxRuns, Duration idleAfter, Duration connectWithin,
                         long nowNanos) {
    List<String> forget = new ArrayList<>();
    List<String> stop = new ArrayList<>();
    int live = 0;
    int free = 0;
    int starting = 0;
    for (Run run : runs) {
      if (!run.active()) {
        forget.add(run.name());
        continue;
      }
      if (run.worker() == Worker.NOT_CONNECTED && nowNanos - run.startedAtNanos() > connectWithin.toNanos()) {
        stop.add(run.name()); // its worker never came: a broken image, a wrong PUBLIC_URL
        continue;
      }
      live++;
      if (run.worker() == Worker.IDLE) {
        free++;
      } else if (run.worker() == Worker.NOT_CONNECTED) {
        starting++;
      }
    }
    int start = Math.max(0, Math.min(queued - free - starting, maxRuns - live));
    if (queued == 0 && idleAfter != null) {
      for (Run run : runs) {
        if (run.active() && run.worker() == Worker.IDLE && !stop.contains(run.name())
            && nowNanos - run.idleSinceNanos() >= idleAfter.toNanos()) {
          stop.add(run.name());
        }
      }
    }
    return new Decision(start, stop, forget);
  }
}
