package dev.kernelrunner.baselines;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;

/** A result's speedup over a baseline (pure): the geometric mean, over the tests both timed, of baseline / result. */
public final class BaselineSpeedup {
  private BaselineSpeedup() {}

  /**
   * {@code testResults}: the result's tests ({name, runtime_ms}); {@code baseline}: a baseline's tests by name
   * ({median}). Null when they share no test with a time above zero.
   */
  public static Double of(JsonArray testResults, JsonObject baseline) {
    double logSum = 0;
    int count = 0;
    for (Object each : testResults) {
      JsonObject test = (JsonObject) each;
      JsonObject figure = baseline.getJsonObject(test.getString("name"));
      Double runtime = test.getDouble("runtime_ms");
      Double median = figure == null ? null : figure.getDouble("median");
      if (runtime != null && median != null && runtime > 0 && median > 0) {
        logSum += Math.log(median / runtime);
        count++;
      }
    }
    return count == 0 ? null : Math.exp(logSum / count);
  }

  /** {method: speedup} for each current baseline of the result's GPU type, problem and dtype. */
  public static JsonObject all(JsonArray testResults, JsonArray baselines) {
    JsonObject speedups = new JsonObject();
    for (Object each : baselines) {
      JsonObject baseline = (JsonObject) each;
      speedups.put(baseline.getString("method"), of(testResults, baseline.getJsonObject("tests")));
    }
    return speedups;
  }

  /**
   * Baselines in KernelBench's seed format (results/timing/<gpu>/baseline_time_torch*.json): {"level1": {problem:
   * {mean, std, min, max, num_trials, hardware, device}}}, each problem by its largest test (KernelBench has one
   * size a problem), for one method; {@code levels}: each problem's level (absent: 1).
   */
  public static JsonObject seed(JsonArray baselines, String method, JsonObject levels) {
    JsonObject seed = new JsonObject();
    for (Object each : baselines) {
      JsonObject baseline = (JsonObject) each;
      if (!method.equals(baseline.getString("method"))) {
        continue;
      }
      JsonObject tests = baseline.getJsonObject("tests");
      JsonObject largest = null;
      for (String name : tests.fieldNames()) {
        largest = tests.getJsonObject(name); // baselines.py writes the cases in order: the last is the largest
      }
      if (largest == null) {
        continue;
      }
      String level = "level" + levels.getInteger(baseline.getString("problem"), 1);
      JsonObject byProblem = seed.getJsonObject(level);
      if (byProblem == null) {
        byProblem = new JsonObject();
        seed.put(level, byProblem);
      }
      byProblem.put(baseline.getString("problem") + (baseline.getString("dtype").equals("float32") ? ""
              : "@" + baseline.getString("dtype")),
          new JsonObject().put("mean", largest.getValue("mean")).put("std", largest.getValue("std"))
              .put("min", largest.getValue("min")).put("max", largest.getValue("max"))
              .put("num_trials", largest.getValue("samples"))
              .put("hardware", baseline.getJsonObject("hardware").getString("hardware")).put("device", "cuda:0"));
    }
    return seed;
  }
}
