package dev.kernelrunner.backend;

import dev.kernelrunner.config.AppConfig;
import io.vertx.core.json.JsonObject;

/**
 * The payload an agent reads (README, "The agent protocol"), built in one place for a submission's run and for a
 * worker's check job.
 */
public final class AgentPayload {
  private AgentPayload() {}

  /**
   * What the run's board said when the service started a benchmark: the low end of its #1's 95% interval
   * ({@code newBestBelowMs}, null where nothing ranks there yet), or that it could not be read ({@code read}
   * false). The agent has Nsight Compute audit a replayed result whose geometric mean is below it: a new #1 beyond
   * the current one's noise (remote-agent's {@code audit_reason}); where the board could not be read, every
   * replayed result of the run.
   */
  public record Board(boolean read, Double newBestBelowMs) {
    public static Board newBestBelow(Double ms) {
      return new Board(true, ms);
    }

    public static Board unread() {
      return new Board(false, null);
    }
  }

  /** A run with no board to beat (a worker's check job). */
  public static JsonObject of(AppConfig.Agent agent, String submissionId, String problem, String language,
                              String dtype, String code, String mode, String gpuType, String eventKey) {
    return of(agent, submissionId, problem, language, dtype, code, mode, gpuType, eventKey, null);
  }

  /**
   * The run's code and settings, signed with {@code eventKey} (base64): what the agent needs, nothing more;
   * {@code board}: the benchmark's board (null: none).
   */
  public static JsonObject of(AppConfig.Agent agent, String submissionId, String problem, String language,
                              String dtype, String code, String mode, String gpuType, String eventKey, Board board) {
    AppConfig.Limits limits = agent.limits();
    // A result this many times faster than the reference is published marked needs_review.
    JsonObject benchmark = new JsonObject().put("review_speedup", agent.reviewSpeedup());
    if (board != null && board.read()) {
      benchmark.put("new_best_below_ms", board.newBestBelowMs());
    } else if (board != null) {
      benchmark.put("audit", true);
    }
    return new JsonObject()
        .put("event_key", eventKey)
        .put("submission_id", submissionId)
        .put("problem", problem)
        .put("language", language)
        .put("dtype", dtype)
        .put("code", code)
        .put("mode", mode)
        .put("gpu_type", gpuType)
        .put("limits", new JsonObject().put("compile_seconds", limits.compileSeconds())
            .put("test_seconds", limits.testSeconds()).put("benchmark_seconds", limits.benchmarkSeconds()))
        .put("benchmark", benchmark);
  }
}
