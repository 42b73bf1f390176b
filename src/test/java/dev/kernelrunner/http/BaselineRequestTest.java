package dev.kernelrunner.http;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.kernelrunner.config.AppConfig;
import dev.kernelrunner.model.BaselineJobs;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** POST /api/admin/baselines's body: which baseline jobs it asks for, and each error named by its field. */
class BaselineRequestTest {
  private static final ProblemCatalog CATALOG = ProblemCatalog.load(Path.of("remote-agent/problems"));
  private static final Map<String, AppConfig.GpuType> TYPES = Map.of("H100", new AppConfig.GpuType("H100", "local", 1));

  private static BaselineRequest.Result validate(JsonObject body) {
    return BaselineRequest.validate(body, CATALOG, TYPES, "admin");
  }

  private static String field(BaselineRequest.Result result) {
    return result.errors().getJsonObject(0).getString("field");
  }

  @Test
  void everyProblemInEachDtypeItTakesByDefault() {
    BaselineJobs jobs = validate(new JsonObject().put("gpu_type", "H100")).jobs();
    assertEquals(CATALOG.all().stream().mapToInt(p -> p.dtypes().size()).sum(), jobs.jobs().size());
    assertTrue(jobs.jobs().size() >= 115, "the whole catalog: " + jobs.jobs().size());
    assertEquals("H100", jobs.gpuType());
    assertEquals("admin", jobs.requestedBy());
  }

  @Test
  void namedProblemsOrALevelAndTheDtypesAsked() {
    BaselineJobs named = validate(new JsonObject().put("gpu_type", "H100")
        .put("problems", new JsonArray().add("leaky-relu").add("softmax"))).jobs();
    assertEquals(new BaselineJobs.Job("leaky-relu", "float32", "cuda"), named.jobs().get(0));
    assertEquals("softmax", named.jobs().get(named.jobs().size() - 1).problem());
    BaselineJobs level = validate(new JsonObject().put("gpu_type", "H100").put("level", 2)).jobs();
    assertTrue(level.jobs().size() >= 10 && level.jobs().stream().allMatch(job -> CATALOG.get(job.problem())
        .orElseThrow().json().getInteger("level") == 2), level.jobs().toString());
    BaselineJobs float32 = validate(new JsonObject().put("gpu_type", "H100")
        .put("dtypes", new JsonArray().add("float32"))).jobs();
    assertTrue(float32.jobs().stream().allMatch(job -> job.dtype().equals("float32")));
  }

  @Test
  void eachErrorNamesItsField() {
    assertEquals("gpu_type", field(validate(new JsonObject())));
    assertEquals("gpu_type", field(validate(new JsonObject().put("gpu_type", "A100"))));
    BaselineRequest.Result unknown = validate(new JsonObject().put("gpu_type", "H100")
        .put("problems", new JsonArray().add("leaky-relu").add("nope")));
    assertEquals("problems[1]", field(unknown));
    assertNull(unknown.jobs());
    assertEquals("problems", field(validate(new JsonObject().put("gpu_type", "H100").put("problems", "leaky-relu"))));
    assertEquals("problems[0]", field(validate(new JsonObject().put("gpu_type", "H100")
        .put("problems", new JsonArray().add(7)))));
    assertEquals("level", field(validate(new JsonObject().put("gpu_type", "H100").put("level", 9))));
    assertEquals("level", field(validate(new JsonObject().put("gpu_type", "H100").put("level", "1"))));
    assertEquals("level", field(validate(new JsonObject().put("gpu_type", "H100").put("level", 1)
        .put("problems", new JsonArray().add("softmax")))));
    assertEquals("dtypes", field(validate(new JsonObject().put("gpu_type", "H100")
        .put("dtypes", new JsonArray().add("float8")))));
  }
}
