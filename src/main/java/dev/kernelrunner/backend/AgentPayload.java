package dev.kernelrunner.backend;

import dev.kernelrunner.config.AppConfig;
import io.vertx.core.json.JsonObject;

/**
 * The payload an agent reads (README, "The agent protocol"), built in one place for a submission's run and for a
 * worker's check job.
 */
public final class AgentPayload {
  private AgentPayload() {}

  /** The run's code and settings, signed with {@code eventKey} (base64): what the agent needs, nothing more. */
  public static JsonObject of(AppConfig.Agent agent, String submissionId, String problem, String language,
                              String dtype, String code, String mode, String gpuType, String eventKey) {
    AppConfig.Limits limits = agent.limits();
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
        // A result this many times faster than the reference is published marked needs_review.
        .put("benchmark", new JsonObject().put("review_speedup", agent.reviewSpeedup()));
  }
}
