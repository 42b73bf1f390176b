package dev.kernelrunner.baselines;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.kernelrunner.http.ProblemCatalog;
import io.vertx.core.json.JsonObject;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The H100 baselines the service ships (conf/baselines/H100.json, baseline jobs through the warm worker on the
 * device): every problem of the catalog in each of its dtypes, both methods, a positive median for each test.
 */
class ShippedBaselinesTest {
  @Test
  void everyProblemEveryDtypeBothMethodsEveryTest() throws Exception {
    JsonObject file = new JsonObject(Files.readString(Path.of("conf/baselines/H100.json")));
    assertEquals("H100", file.getString("gpu_type"));
    JsonObject problems = file.getJsonObject("problems");
    List<String> missing = new ArrayList<>();
    for (ProblemCatalog.Problem problem : ProblemCatalog.load(Path.of("remote-agent/problems")).all()) {
      for (String dtype : problem.dtypes()) {
        JsonObject methods = problems.getJsonObject(problem.slug(), new JsonObject()).getJsonObject(dtype);
        for (String method : BaselineFile.METHODS) {
          JsonObject tests = methods == null ? null : methods.getJsonObject(method);
          if (tests == null || tests.isEmpty()) {
            missing.add(problem.slug() + " " + dtype + " " + method);
            continue;
          }
          tests.forEach(test -> assertTrue(((JsonObject) test.getValue()).getDouble("median") > 0,
              problem.slug() + " " + test.getKey()));
        }
      }
    }
    assertTrue(missing.isEmpty(), "no baseline: " + missing);
    assertTrue(problems.size() >= 115, "problems: " + problems.size());
  }
}
