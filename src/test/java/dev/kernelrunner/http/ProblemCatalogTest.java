package dev.kernelrunner.http;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import dev.kernelrunner.support.TempDirs;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.api.Assumptions;
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
  void problemsAreFoundByLevelTagAndText() {
    ProblemCatalog catalog = ProblemCatalog.load(Path.of("remote-agent/problems"));
    int one = catalog.filter(1, null, null).size();
    int two = catalog.filter(2, null, null).size();
    assertEquals(catalog.toJson().size(), one + two, "every problem so far is of level 1 or 2");
    assertTrue(one >= 80 && two >= 10, one + " of level 1, " + two + " of level 2");
    assertEquals(two, catalog.filter(2, "fusion", null).size(), "every level-2 problem is a fusion");
    assertEquals(0, catalog.filter(3, null, null).size());
    List<String> activations = slugs(catalog.filter(null, "activation", null));
    assertTrue(activations.containsAll(List.of("relu", "sigmoid", "gelu", "hard-tanh")), activations.toString());
    assertTrue(!activations.contains("matrix-multiplication"), activations.toString());
    assertEquals(List.of("gelu", "new-gelu"), slugs(catalog.filter(1, null, "GeLu")), "text, case ignored");
    assertTrue(slugs(catalog.filter(2, null, "gelu")).contains("matmul-divide-gelu"));
    assertEquals(List.of("new-gelu"), slugs(catalog.filter(1, "activation", "minGPT")), "all three at once");
  }

  @Test
  void aProblemsDetailGivesItsSignaturesPerLanguageAndDtypeAndAStarter() {
    ProblemCatalog catalog = ProblemCatalog.load(Path.of("remote-agent/problems"));
    JsonObject leaky = ProblemCatalog.detail(catalog.get("leaky-relu").orElseThrow());
    JsonObject cuda = leaky.getJsonObject("signatures").getJsonObject("cuda").getJsonObject("float32");
    assertEquals("__global__ void solution(const float* input, float alpha, float* output, size_t M, size_t N)",
        cuda.getString("kernel"));
    assertEquals("extern \"C\" void solution(const float* input, float alpha, float* output, size_t M, size_t N)",
        cuda.getString("host"));
    assertEquals(new JsonArray(), cuda.getJsonArray("includes"));
    assertTrue(leaky.getString("launch_note").contains("M * N"), leaky.getString("launch_note"));
    JsonObject half = ProblemCatalog.detail(catalog.get("vector-addition").orElseThrow()).getJsonObject("signatures");
    assertEquals("__global__ void solution(const __half* A, const __half* B, __half* C, size_t N)",
        half.getJsonObject("cuda").getJsonObject("float16").getString("kernel"));
    assertEquals(new JsonArray().add("<hip/hip_runtime.h>").add("<hip/hip_bf16.h>"),
        half.getJsonObject("hip").getJsonObject("bfloat16").getJsonArray("includes"));
    String starter = leaky.getJsonObject("starter").getString("hip");
    assertTrue(starter.startsWith("#include <hip/hip_runtime.h>\n"), starter);
    assertTrue(starter.contains(cuda.getString("kernel") + " {"), starter);
  }

  @Test
  void everyStarterCompilesWithNvcc() throws Exception {
    Path nvcc = Path.of("/usr/local/cuda/bin/nvcc");
    String command = Files.isExecutable(nvcc) ? nvcc.toString()
        : Files.isExecutable(Path.of("/usr/local/bin/nvcc")) ? "/usr/local/bin/nvcc" : null;
    Assumptions.assumeTrue(command != null, "nvcc is not installed");
    ProblemCatalog catalog = ProblemCatalog.load(Path.of("remote-agent/problems"));
    Path work = TempDirs.directory("starters");
    String include = Path.of("remote-agent/remote_agent/include").toAbsolutePath().toString();
    // One translation unit per language, each starter in a namespace of its own (its includes first): a hundred
    // nvcc runs took minutes of CI. Where it fails, each starter is built alone to name the ones that do not build.
    Map<String, Map<String, String>> byLanguage = new TreeMap<>();
    for (Object each : catalog.toJson()) {
      String slug = ((JsonObject) each).getString("slug");
      JsonObject starters = ProblemCatalog.detail(catalog.get(slug).orElseThrow()).getJsonObject("starter");
      for (String language : starters.fieldNames()) {
        byLanguage.computeIfAbsent(language, l -> new TreeMap<>()).put(slug, starters.getString(language));
      }
    }
    for (Map.Entry<String, Map<String, String>> language : byLanguage.entrySet()) {
      StringBuilder includes = new StringBuilder();
      StringBuilder bodies = new StringBuilder();
      for (Map.Entry<String, String> starter : language.getValue().entrySet()) {
        bodies.append("namespace kr_").append(starter.getKey().replace('-', '_')).append(" {\n");
        for (String line : starter.getValue().split("\n")) {
          (line.startsWith("#include") ? includes : bodies).append(line).append('\n');
        }
        bodies.append("}\n");
      }
      String output = build(command, include, work, language.getKey(), includes + bodies.toString());
      if (output != null) {
        List<String> failed = new ArrayList<>();
        for (Map.Entry<String, String> starter : language.getValue().entrySet()) {
          String alone = build(command, include, work, starter.getKey() + "-" + language.getKey(), starter.getValue());
          if (alone != null) {
            failed.add(starter.getKey() + ": " + alone);
          }
        }
        fail(language.getKey() + " starters do not build: " + (failed.isEmpty() ? output : failed));
      }
    }
  }

  /** Null when {@code code} compiles (HIP on NVIDIA as the agent builds it: the HIP-to-CUDA header stands in for
   * {@code <hip/hip_runtime.h>}), else nvcc's output. */
  private static String build(String nvcc, String include, Path work, String name, String code) throws Exception {
    Path source = work.resolve(name + ".cu");
    Files.writeString(source, code);
    Process build = new ProcessBuilder(nvcc, "-c", "-arch=sm_90", "-I", include, "-o",
        work.resolve(name + ".o").toString(), source.toString()).redirectErrorStream(true).start();
    String output = new String(build.getInputStream().readAllBytes());
    return build.waitFor() == 0 ? null : output;
  }

  private static List<String> slugs(JsonArray problems) {
    return problems.stream().map(p -> ((JsonObject) p).getString("slug")).toList();
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
