package dev.kernelrunner.leaderboard;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

/**
 * KernelBench's fast_p for one user (pure): over the problems in scope, the share whose best accepted result on a
 * GPU type is correct and more than p times faster than the baseline, for p = 0 (correct at all), 1 and 2. The
 * baselines: the PyTorch reference (eager) timed in each run on the same GPU (a result's {@code geomean_speedup}), and
 * the stored baselines of its GPU type (PyTorch eager and torch.compile, {@code baselines} table), each a speedup
 * field of the rows.
 */
public final class FastP {
  public static final String BASELINE = "PyTorch eager: the reference timed in each run, on the same GPU, as the "
      + "solution is (the result's geomean_speedup)";
  /** The stored baselines fast_p is also counted over: {row field: what it is}. */
  public static final Map<String, String> STORED = Map.of(
      "eager", "PyTorch eager, the stored baseline of the GPU type (GET /api/baselines): a problem without one counts "
          + "as correct, never as faster",
      "torch_compile", "torch.compile (inductor, default mode), the stored baseline of the GPU type (GET "
          + "/api/baselines): a problem without one counts as correct, never as faster");
  private static final double[] P = {0, 1, 2};

  private FastP() {}

  /**
   * {@code best}: {gpu_type, problem, speedup} rows; {@code scope}: the problems counted (the catalog, or a level
   * of it). Per GPU type with any result: {problems, solved, fast_0, fast_1, fast_2}.
   */
  public static JsonObject of(JsonArray best, Set<String> scope) {
    return of(best, scope, "speedup").put("baseline", BASELINE);
  }

  /** fast_p over the reference timed in each run ({@link #of(JsonArray, Set)}) and over each stored baseline. */
  public static JsonObject all(JsonArray best, Set<String> scope) {
    JsonObject stored = new JsonObject();
    new java.util.TreeMap<>(STORED).forEach((field, text) -> stored.put(field, of(best, scope, field)
        .put("baseline", text)));
    return of(best, scope).put("baselines", stored);
  }

  /** Per GPU type, fast_p with {@code field} of each row as its speedup. */
  private static JsonObject of(JsonArray best, Set<String> scope, String field) {
    JsonObject byType = new JsonObject();
    Map<String, int[]> counts = new TreeMap<>();
    for (Object each : best) {
      JsonObject row = (JsonObject) each;
      if (!scope.contains(row.getString("problem"))) {
        continue;
      }
      int[] count = counts.computeIfAbsent(row.getString("gpu_type"), t -> new int[P.length]);
      Double speedup = row.getDouble(field);
      for (int i = 0; i < P.length; i++) {
        if (i == 0 || (speedup != null && speedup > P[i])) {
          count[i]++;
        }
      }
    }
    counts.forEach((type, count) -> { // sorted by type
      JsonObject figures = new JsonObject().put("problems", scope.size()).put("solved", count[0]);
      for (int i = 0; i < P.length; i++) {
        figures.put("fast_" + (int) P[i], scope.isEmpty() ? 0.0 : (double) count[i] / scope.size());
      }
      byType.put(type, figures);
    });
    return new JsonObject().put("gpu_types", byType);
  }
}
