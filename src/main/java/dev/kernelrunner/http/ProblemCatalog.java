package dev.kernelrunner.http;

import io.vertx.core.json.DecodeException;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.stream.Stream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** The problems the agent knows, read from {@code <problems_dir>/<slug>/problem.json}. */
public final class ProblemCatalog {
  private static final Logger log = LoggerFactory.getLogger(ProblemCatalog.class);
  static final Set<String> LANGUAGES = Set.of("cuda", "hip");

  /** One problem's metadata. */
  public record Problem(String slug, JsonObject json, List<String> dtypes, List<String> languages) {}

  private final Map<String, Problem> problems;

  private ProblemCatalog(Map<String, Problem> problems) {
    this.problems = problems;
  }

  /** Reads every problem.json (blocking); a malformed one is skipped with a warning naming it. */
  public static ProblemCatalog load(Path dir) {
    Map<String, Problem> problems = new LinkedHashMap<>();
    if (!Files.isDirectory(dir)) {
      log.warn("no problems directory at {}: the catalog is empty", dir.toAbsolutePath());
      return new ProblemCatalog(problems);
    }
    try (Stream<Path> entries = Files.list(dir)) {
      for (Path file : entries.sorted().map(p -> p.resolve("problem.json")).filter(Files::isRegularFile).toList()) {
        try {
          Problem problem = parse(file.getParent().getFileName().toString(), new JsonObject(Files.readString(file)));
          problems.put(problem.slug(), problem);
        } catch (IOException | DecodeException | IllegalArgumentException e) {
          log.warn("skipped {}: {}", file, e.getMessage());
        }
      }
    } catch (IOException e) {
      log.warn("cannot list {}: {}", dir, e.toString());
    }
    return new ProblemCatalog(problems);
  }

  static Problem parse(String folder, JsonObject json) {
    String slug = json.getString("slug");
    if (!folder.equals(slug)) {
      throw new IllegalArgumentException("slug '" + slug + "' does not match its folder '" + folder + "'");
    }
    for (String field : List.of("title", "description")) {
      if (json.getString(field, "").isBlank()) {
        throw new IllegalArgumentException("missing " + field);
      }
    }
    JsonArray parameters = json.getJsonArray("parameters");
    if (parameters == null || parameters.isEmpty()) {
      throw new IllegalArgumentException("missing parameters");
    }
    for (Object p : parameters) {
      JsonObject param = (JsonObject) p;
      if (param.getString("name", "").isBlank() || param.getString("type", "").isBlank()
          || param.getBoolean("pointer") == null || param.getBoolean("const") == null) {
        throw new IllegalArgumentException("a parameter needs name, type, pointer and const: " + param.encode());
      }
    }
    List<String> dtypes = strings(json, "dtypes");
    List<String> languages = strings(json, "languages");
    if (!LANGUAGES.containsAll(languages)) {
      throw new IllegalArgumentException("languages must be among " + LANGUAGES);
    }
    return new Problem(slug, json, dtypes, languages);
  }

  private static List<String> strings(JsonObject json, String field) {
    JsonArray array = json.getJsonArray(field);
    if (array == null || array.isEmpty()) {
      throw new IllegalArgumentException("missing " + field);
    }
    List<String> values = new ArrayList<>();
    array.forEach(v -> values.add(String.valueOf(v)));
    return values;
  }

  /** Every problem, in slug order. */
  public List<Problem> all() {
    return List.copyOf(problems.values());
  }

  public Optional<Problem> get(String slug) {
    return Optional.ofNullable(problems.get(slug));
  }

  public JsonArray toJson() {
    return filter(null, null, null);
  }

  /**
   * The problems of {@code level} with {@code tag} whose slug, title or description holds {@code text} (case
   * ignored); a null criterion takes every problem.
   */
  public JsonArray filter(Integer level, String tag, String text) {
    String needle = text == null ? null : text.toLowerCase(Locale.ROOT);
    JsonArray array = new JsonArray();
    problems.values().stream()
        .filter(p -> level == null || level.equals(p.json().getInteger("level")))
        .filter(p -> tag == null || p.json().getJsonArray("tags", new JsonArray()).contains(tag))
        .filter(p -> needle == null || (p.slug() + "\n" + p.json().getString("title") + "\n"
            + p.json().getString("description")).toLowerCase(Locale.ROOT).contains(needle))
        .forEach(p -> array.add(p.json()));
    return array;
  }

  /**
   * One problem as a kernel author starts it: its metadata, the {@code solution(...)} it takes per language and
   * dtype (a {@code __global__} kernel the agent launches, or an {@code extern "C"} host function that launches its
   * own), how the agent launches a kernel, and a starter per language that compiles and fails every test politely.
   */
  public static JsonObject detail(Problem problem) {
    JsonObject signatures = new JsonObject();
    JsonObject starters = new JsonObject();
    for (String language : problem.languages()) {
      JsonObject byDtype = new JsonObject();
      for (String dtype : problem.dtypes()) {
        byDtype.put(dtype, new JsonObject().put("kernel", "__global__ void solution(" + params(problem, language,
            dtype) + ")").put("host", "extern \"C\" void solution(" + params(problem, language, dtype) + ")")
            .put("includes", new JsonArray(includes(language, dtype))));
      }
      signatures.put(language, byDtype);
      starters.put(language, starter(problem, language));
    }
    return problem.json().copy().put("signatures", signatures).put("launch_note", launchNote(problem))
        .put("starter", starters);
  }

  private static String params(Problem problem, String language, String dtype) {
    List<String> out = new ArrayList<>();
    for (Object each : problem.json().getJsonArray("parameters")) {
      JsonObject p = (JsonObject) each;
      String type = p.getString("type");
      if ("float".equals(type)) {
        type = elementType(language, dtype);
      }
      out.add((p.getBoolean("pointer") ? (p.getBoolean("const") ? "const " : "") + type + "* " : type + " ")
          + p.getString("name"));
    }
    return String.join(", ", out);
  }

  /** The C type of a {@code float} parameter in {@code dtype}, as the agent's builds name it. */
  private static String elementType(String language, String dtype) {
    switch (dtype) {
      case "float16":
        return "__half";
      case "bfloat16":
        return "hip".equals(language) ? "__hip_bfloat16" : "__nv_bfloat16";
      default:
        return "float";
    }
  }

  private static List<String> includes(String language, String dtype) {
    List<String> out = new ArrayList<>();
    boolean hip = "hip".equals(language);
    if (hip) {
      out.add("<hip/hip_runtime.h>");
    }
    if ("float16".equals(dtype)) {
      out.add(hip ? "<hip/hip_fp16.h>" : "<cuda_fp16.h>");
    } else if ("bfloat16".equals(dtype)) {
      out.add(hip ? "<hip/hip_bf16.h>" : "<cuda_bf16.h>");
    }
    return out;
  }

  private static String launchNote(Problem problem) {
    JsonObject launch = problem.json().getJsonObject("launch", new JsonObject());
    Object block = launch.getValue("block");
    if (launch.containsKey("elements")) {
      return "a __global__ solution() is launched with one thread per element of " + launch.getString("elements")
          + ", in blocks of " + (block == null ? 256 : block) + " (1-D)";
    }
    return "a __global__ solution() is launched over x = " + launch.getString("x") + " and y = "
        + launch.getString("y", "1") + ", in blocks of " + (block == null ? "[16, 16]" : block) + " (2-D)";
  }

  /** A kernel for the first dtype that compiles, computes nothing, and so fails every test with WRONG_ANSWER. */
  private static String starter(Problem problem, String language) {
    String dtype = problem.dtypes().get(0);
    JsonObject launch = problem.json().getJsonObject("launch", new JsonObject());
    StringBuilder code = new StringBuilder();
    includes(language, dtype).forEach(include -> code.append("#include ").append(include).append('\n'));
    code.append("// ").append(problem.json().getString("title")).append(" (").append(problem.slug())
        .append(", ").append(dtype).append(")\n// ").append(launchNote(problem)).append(".\n")
        .append("__global__ void solution(").append(params(problem, language, dtype)).append(") {\n");
    if (launch.containsKey("elements")) {
      code.append("  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;\n")
          .append("  if (i < (size_t)(").append(launch.getString("elements")).append(")) {\n");
    } else {
      code.append("  size_t x = blockIdx.x * (size_t)blockDim.x + threadIdx.x;\n")
          .append("  size_t y = blockIdx.y * (size_t)blockDim.y + threadIdx.y;\n")
          .append("  if (x < (size_t)(").append(launch.getString("x")).append(") && y < (size_t)(")
          .append(launch.getString("y", "1")).append(")) {\n");
    }
    return code.append("    // TODO: write this thread's part of the outputs; until then every test fails.\n")
        .append("  }\n}\n").toString();
  }
}
