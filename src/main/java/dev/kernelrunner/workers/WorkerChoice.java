package dev.kernelrunner.workers;

import java.util.Comparator;
import java.util.List;

/**
 * Which free worker gets the next job of its GPU type (pure; the hub asks). Never a quarantined one; before the
 * others, a worker that did not lose this very submission's last job, then one with fewer jobs lost lately, then one
 * whose process did not just start again (a crash loop takes a new id each time, with nothing done), then one whose
 * GPU runs no other job (a GPU holds two jobs, one on the device at a time: an idle GPU starts it sooner), then the
 * one with the fewest jobs done (the work spreads).
 */
final class WorkerChoice {
  private WorkerChoice() {}

  /**
   * A free worker as the choice sees it: {@code lostThisJob}, the submission's last job was lost on its machine;
   * {@code recentLosses}, jobs its machine lost lately; {@code restartedRecently}, its machine's worker came back
   * under a new id lately; {@code gpuBusy}, the other place of its GPU runs a job.
   */
  record Candidate(String workerId, boolean quarantined, int recentLosses, boolean restartedRecently,
                   boolean lostThisJob, boolean gpuBusy, int jobsDone) {}

  private static final Comparator<Candidate> ORDER = Comparator.comparing(Candidate::lostThisJob)
      .thenComparingInt(Candidate::recentLosses).thenComparing(Candidate::restartedRecently)
      .thenComparing(Candidate::gpuBusy).thenComparingInt(Candidate::jobsDone);

  /** The worker to give the job to, or null when none may have it (none free, or all quarantined). */
  static String pick(List<Candidate> free) {
    return free.stream().filter(candidate -> !candidate.quarantined()).min(ORDER).map(Candidate::workerId)
        .orElse(null);
  }
}
