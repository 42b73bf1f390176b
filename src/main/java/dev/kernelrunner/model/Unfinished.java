package dev.kernelrunner.model;

import java.util.List;

/**
 * The answer of {@code store.submission.unfinished} and {@code store.submission.verdict_pending} (asked with
 * {@link Asked}): what a start finds of the submissions an earlier instance left, oldest first.
 */
public record Unfinished(List<Found> submissions) {

  public Unfinished {
    submissions = List.copyOf(submissions);
  }

  /** The question (it has no parameters). */
  public record Asked() {}

  /**
   * One submission as stored: its owner and GPU type, status and mode, whether its streams' end cancels it
   * ({@code cancelOnDisconnect}), how often it was put back in line, and where its run was (backend, pid, run name,
   * log position and event key; null when it had none).
   */
  public record Found(String id, String userId, String gpuType, EventType status, Mode mode,
                      boolean cancelOnDisconnect, int restartCount, String backend, Integer pid, String runName,
                      int logOffset, String logPosition, String eventKey) {}
}
