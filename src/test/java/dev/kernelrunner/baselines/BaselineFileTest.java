package dev.kernelrunner.baselines;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.vertx.core.json.JsonObject;
import org.junit.jupiter.api.Test;

/** A baseline job's BASELINED as the baselines file the store loads. */
class BaselineFileTest {
  private static JsonObject baselined() {
    JsonObject figures = new JsonObject().put("n = 1", new JsonObject().put("median", 0.01));
    return new JsonObject().put("problem", "leaky-relu").put("dtype", "float32")
        .put("measured_at", "2026-11-26T14:00:00+00:00").put("method", "the agent's timer")
        .put("hardware", new JsonObject().put("hardware", "NVIDIA H100").put("driver", "580").put("torch", "2.9")
            .put("triton", "3.5").put("cuda", "12.8").put("injected", "x"))
        .put("tests", new JsonObject().put("eager", figures).put("torch_compile", figures.copy()))
        .put("isolation", new JsonObject().put("full", true));
  }

  @Test
  void theJobsGpuTypeItsVersionsAndItsFiguresUnderProblemAndDtype() {
    JsonObject file = BaselineFile.ofJob("H100", baselined().put("gpu_type", "A100"));
    assertEquals("H100", file.getString("gpu_type"), "the job's type, not a field of the event");
    assertEquals("NVIDIA H100", file.getString("hardware"));
    assertEquals("12.8", file.getString("cuda"));
    assertFalse(file.containsKey("injected"));
    assertEquals(0.01, file.getJsonObject("problems").getJsonObject("leaky-relu").getJsonObject("float32")
        .getJsonObject("torch_compile").getJsonObject("n = 1").getDouble("median"));
    assertTrue(BaselineFile.source("abc").equals("job abc"));
  }

  @Test
  void whatIsMissingIsNamed() {
    for (String field : new String[] {"problem", "dtype", "measured_at", "tests"}) {
      JsonObject fields = baselined();
      fields.remove(field);
      IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
          () -> BaselineFile.ofJob("H100", fields));
      assertTrue(e.getMessage().startsWith(field), e.getMessage());
    }
    JsonObject noCompile = baselined();
    noCompile.getJsonObject("tests").remove("torch_compile");
    assertThrows(IllegalArgumentException.class, () -> BaselineFile.ofJob("H100", noCompile));
    assertThrows(IllegalArgumentException.class, () -> BaselineFile.ofJob("H100",
        baselined().put("measured_at", "yesterday")));
  }
}
