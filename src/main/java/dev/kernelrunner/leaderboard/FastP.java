package dev.kernelrunner.leaderboard;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

/**
 * KernelBench's fast_p for one user (pure): over the problems in scope, the share whose best accepted result on a
 * GPU type is correct and more than p times faster than the baseline, for p = 0 (correct at all), 1 and 2. The
 * baseline is the PyTorch reference (eager) timed in each run on the same GPU: a result's {@code geomean_speedup}.
 */
public final class FastP {
  public static final String BASELINE = "PyTorch eager: the reference timed in each run, on the same GPU, as the "
      + "solution is (the result's geomean_speedup)";
  private static final double[] P = {0, 1, 2};

  private FastP() {}

  /**
   * {@code best}: {gpu_type, problem, speedup} rows; {@code scope}: the problems counted (the catalog, or a level
   * of it). Per GPU type with any result: {problems, solved, fast_0, fast_1, fast_2}.
   */
  public static JsonObject of(JsonArray best, Set<String> scope) {
    JsonObject byType = new JsonObject();
    Map<String, int[]> counts = new TreeMap<>();
    for (Object each : best) {
      JsonObject row = (JsonObject) each;
      if (!scope.contains(row.getString("problem"))) {
        continue;
      }
      int[] count = counts.computeIfAbsent(row.getString("gpu_type"), t -> new int[P.length]);
      Double speedup = row.getDouble("speedup");
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
    return new JsonObject().put("baseline", BASELINE).put("gpu_types", byType);
  }
}
