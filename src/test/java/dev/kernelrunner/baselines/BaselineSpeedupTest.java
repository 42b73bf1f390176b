package dev.kernelrunner.baselines;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import org.junit.jupiter.api.Test;

class BaselineSpeedupTest {
  private static JsonObject test(String name, Double ms) {
    return new JsonObject().put("name", name).put("runtime_ms", ms);
  }

  @Test
  void theGeometricMeanOverTheTestsBothTimed() {
    JsonArray result = new JsonArray().add(test("a", 1.0)).add(test("b", 4.0)).add(test("c", 2.0))
        .add(test("d", 0.0));
    JsonObject baseline = new JsonObject().put("a", new JsonObject().put("median", 2.0))
        .put("b", new JsonObject().put("median", 2.0)).put("d", new JsonObject().put("median", 1.0));
    // a: 2x, b: 0.5x (c has no baseline, d no time): sqrt(2 * 0.5) = 1.
    assertEquals(1.0, BaselineSpeedup.of(result, baseline), 1e-12);
    assertNull(BaselineSpeedup.of(result, new JsonObject()), "nothing in common: no figure");
  }
}
