package dev.kernelrunner.leaderboard;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/** A board's edge: the store's rows in, the API's entries out. */
public final class BoardJson {
  private BoardJson() {}

  /**
   * One candidate from a row of the board query: {@code id, user_id, created_at, speedup, tests} (the result's
   * test_results) and {@code samples} ([{test_id, samples}] from its BENCHMARK_RESULT events).
   */
  public static Board.Candidate candidate(JsonObject row) {
    Map<String, List<Double>> samples = new HashMap<>();
    for (Object item : row.getJsonArray("samples", new JsonArray())) {
      if (item instanceof JsonObject timed && timed.getValue("samples") instanceof JsonArray values) {
        samples.put(String.valueOf(timed.getValue("test_id")), numbers(values));
      }
    }
    List<Board.Test> tests = new ArrayList<>();
    for (Object item : row.getJsonArray("tests", new JsonArray())) {
      if (item instanceof JsonObject test && test.getValue("runtime_ms") instanceof Number runtime) {
        String id = String.valueOf(test.getValue("test_id"));
        tests.add(new Board.Test(id, runtime.doubleValue(), samples.get(id)));
      } else {
        tests.add(new Board.Test("?", Double.NaN, null)); // a test without a figure: no interval, left out
      }
    }
    Object speedup = row.getValue("speedup");
    return new Board.Candidate(row.getString("id"), row.getString("user_id"), row.getString("created_at"),
        speedup instanceof Number n ? n.doubleValue() : null, tests);
  }

  public static JsonObject entry(Board.Entry entry) {
    return new JsonObject()
        .put("rank", entry.rank())
        .put("tie", entry.tie())
        .put("user_id", entry.candidate().userId())
        .put("submission_id", entry.candidate().submissionId())
        .put("geomean_runtime_ms", entry.geomeanMs())
        .put("interval_ms", new JsonObject().put("low", entry.interval().lowMs()).put("high", entry.interval().highMs())
            .put("confidence", 0.95))
        .put("speedup", entry.candidate().speedup())
        .put("tests", entry.candidate().tests().size())
        .put("created_at", entry.candidate().createdAt());
  }

  private static List<Double> numbers(JsonArray values) {
    List<Double> numbers = new ArrayList<>();
    for (Object value : values) {
      numbers.add(value instanceof Number n ? n.doubleValue() : null);
    }
    return numbers;
  }
}
