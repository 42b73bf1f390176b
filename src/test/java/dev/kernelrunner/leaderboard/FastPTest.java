package dev.kernelrunner.leaderboard;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.util.Set;
import org.junit.jupiter.api.Test;

class FastPTest {
  private static JsonObject best(String type, String problem, Double speedup) {
    return new JsonObject().put("gpu_type", type).put("problem", problem).put("speedup", speedup);
  }

  @Test
  void theSharesCountProblemsInScopeOverTheBaselineStrictly() {
    JsonArray rows = new JsonArray().add(best("H100", "a", 0.5)).add(best("H100", "b", 1.0))
        .add(best("H100", "c", 2.5)).add(best("H100", "gone", 9.0)).add(best("MI300X", "a", 1.5))
        .add(best("MI300X", "b", null));
    JsonObject fast = FastP.of(rows, Set.of("a", "b", "c", "d"));
    JsonObject h100 = fast.getJsonObject("gpu_types").getJsonObject("H100");
    assertEquals(new JsonObject().put("problems", 4).put("solved", 3).put("fast_0", 0.75).put("fast_1", 0.25)
        .put("fast_2", 0.25), h100, "a problem outside the scope counts for nothing; 1.0x is not faster");
    JsonObject mi300 = fast.getJsonObject("gpu_types").getJsonObject("MI300X");
    assertEquals(0.5, mi300.getDouble("fast_0"), "correct, even with no speedup known");
    assertEquals(0.25, mi300.getDouble("fast_1"));
    assertEquals(0.0, mi300.getDouble("fast_2"));
    assertEquals(new JsonObject(), FastP.of(new JsonArray(), Set.of("a")).getJsonObject("gpu_types"));
  }

  @Test
  void theStoredBaselinesEachGetTheirOwnShares() {
    JsonArray rows = new JsonArray()
        .add(best("H100", "a", 3.0).put("eager", 2.5).put("torch_compile", 1.5))
        .add(best("H100", "b", 3.0).put("eager", 0.9).put("torch_compile", null));
    JsonObject fast = FastP.all(rows, Set.of("a", "b"));
    assertEquals(1.0, fast.getJsonObject("gpu_types").getJsonObject("H100").getDouble("fast_2"), "the run's reference");
    JsonObject eager = fast.getJsonObject("baselines").getJsonObject("eager");
    assertEquals(new JsonObject().put("problems", 2).put("solved", 2).put("fast_0", 1.0).put("fast_1", 0.5)
        .put("fast_2", 0.5), eager.getJsonObject("gpu_types").getJsonObject("H100"));
    JsonObject compiled = fast.getJsonObject("baselines").getJsonObject("torch_compile");
    assertEquals(new JsonObject().put("problems", 2).put("solved", 2).put("fast_0", 1.0).put("fast_1", 0.5)
        .put("fast_2", 0.0), compiled.getJsonObject("gpu_types").getJsonObject("H100"),
        "no stored baseline: correct, never faster");
    assertTrue(compiled.getString("baseline").startsWith("torch.compile"));
  }
}
