package dev.kernelrunner.model;

import io.vertx.core.json.JsonObject;
import java.util.List;

/**
 * Bus body of {@code baselines.measure}: an admin's request to time PyTorch's own reference of each problem and
 * dtype on {@code gpuType} (eager and torch.compile), one baseline job each through the normal queue and backends;
 * answered {@link Queued}.
 */
public record BaselineJobs(String gpuType, List<Job> jobs, String requestedBy) {

  /** One problem in one dtype; {@code language}: the one its row names (a baseline job has no code). */
  public record Job(String problem, String dtype, String language) {}

  /** The jobs as queued, in the order asked. */
  public record Queued(String gpuType, List<Created> jobs) {}

  /** A queued job: its submission id. */
  public record Created(String id, String problem, String dtype) {}

  /**
   * Bus body of {@code baselines.measured}: a baseline job ended BASELINED ({@code fields}: that event's, as the
   * agent sent them); answered {@code {inserted}} once its figures are the GPU type's newest baselines.
   */
  public record Measured(String submissionId, String gpuType, JsonObject fields) {}
}
