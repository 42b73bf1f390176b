package dev.kernelrunner.backend;

/**
 * What the tracker and the registry ask of the supervisor about a submission's run: the supervisor's bus messages,
 * typed (registered with the LocalCodec), each with the answer it gets.
 */
public final class RunOrder {
  private RunOrder() {}

  /** Start a run on {@code backend}; answered {@code true} at once: how the start went arrives as progress. */
  public record Start(String submissionId, String gpuType, String backend) {}

  /**
   * Follow again a run that an earlier instance of the service started on {@code backend} (it went on while the
   * service was down), from where {@code resume} says; answered {@code true} at once, as a start is.
   */
  public record Attach(String backend, Backend.Resume resume) {}

  /** Stop the run; answered {@link Stopped} once its processes are gone and its end is stored. */
  public record Kill(String submissionId) {}

  /**
   * A kill's answer: {@code running} whether there was a run to stop, and the status its end was stored with (null
   * when there was none, or it is not known).
   */
  public record Stopped(String status, boolean running) {}

  /** Kill {@code pid}, an agent process an earlier run of the submission left (a restart); answered whether it was. */
  public record Reap(String submissionId, long pid) {}

  /** Stop the runs on {@code backend} that belong to no live submission; answered how many were stopped. */
  public record Sweep(String backend) {}
}
