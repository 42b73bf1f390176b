package dev.kernelrunner.http;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;

class ProblemCatalogTest {

  @Test
  void everyShippedProblemIsValid() throws Exception {
    Path dir = Path.of("remote-agent/problems");
    long folders;
    try (var entries = Files.list(dir)) {
      folders = entries.filter(p -> Files.isRegularFile(p.resolve("problem.json"))).count();
    }
    ProblemCatalog catalog = ProblemCatalog.load(dir);
    assertEquals(folders, catalog.toJson().size(), "a problem.json was skipped as invalid");
    ProblemCatalog.Problem leaky = catalog.get("leaky-relu").orElseThrow();
    assertEquals(List.of("float32"), leaky.dtypes());
    assertEquals(List.of("cuda", "hip"), leaky.languages());
  }

  @Test
  void malformedMetadataIsRejected() {
    JsonObject base = new JsonObject().put("slug", "p").put("title", "P").put("description", "d")
        .put("parameters", new JsonArray().add(new JsonObject().put("name", "a").put("type", "float")
            .put("pointer", true).put("const", true)))
        .put("dtypes", new JsonArray().add("float32"))
        .put("languages", new JsonArray().add("cuda"));
    assertEquals("p", ProblemCatalog.parse("p", base.copy()).slug());
    assertThrows(IllegalArgumentException.class, () -> ProblemCatalog.parse("other-folder", base.copy()));
    assertThrows(IllegalArgumentException.class,
        () -> ProblemCatalog.parse("p", base.copy().put("languages", new JsonArray().add("rust"))));
    assertThrows(IllegalArgumentException.class, () -> ProblemCatalog.parse("p", base.copy().put("title", "")));
    assertThrows(IllegalArgumentException.class,
        () -> ProblemCatalog.parse("p", base.copy().put("dtypes", new JsonArray())));
    assertThrows(IllegalArgumentException.class, () -> ProblemCatalog.parse("p", base.copy()
        .put("parameters", new JsonArray().add(new JsonObject().put("name", "a")))));
  }
}
