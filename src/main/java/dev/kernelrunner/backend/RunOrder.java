package dev.kernelrunner.backend;

import dev.kernelrunner.bus.ForSubmission;

/**
 * What the tracker and the registry ask of the supervisor about a submission's run: the supervisor's bus messages,
 * typed (registered with the LocalCodec), each with the answer it gets. Those about one submission carry its id into
 * the log lines of whoever handles them ({@link ForSubmission}).
 */
public final class RunOrder {
  private RunOrder() {}

  /** Start a run on {@code backend}; answered {@code true} at once: how the start went arrives as progress. */
  public record Start(String submissionId, String gpuType, String backend) implements ForSubmission {}

  /**
   * Follow again a run that an earlier instance of the service started on {@code backend} (it went on while the
   * service was down), from where {@code resume} says; answered {@code true} once the backend follows it (if it
   * cannot, that arrives as the run's end).
   */
  public record Attach(String backend, Backend.Resume resume) implements ForSubmission {
    @Override
    public String submissionId() {
      return resume.submissionId();
    }
  }

  /** Stop the run; answered {@link Stopped} once its processes are gone and its end is stored. */
  public record Kill(String submissionId) implements ForSubmission {}

  /**
   * A kill's answer: {@code running} whether there was a run to stop, and the status its end was stored with (null
   * when there was none, or it is not known).
   */
  public record Stopped(String status, boolean running) {}

  /** Kill {@code pid}, an agent process an earlier run of the submission left (a restart); answered whether it was. */
  public record Reap(String submissionId, long pid) implements ForSubmission {}

  /** Stop the runs on {@code backend} that belong to no live submission; answered how many were stopped. */
  public record Sweep(String backend) {}
}
