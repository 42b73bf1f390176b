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

  public Optional<Problem> get(String slug) {
    return Optional.ofNullable(problems.get(slug));
  }

  public JsonArray toJson() {
    JsonArray array = new JsonArray();
    problems.values().forEach(p -> array.add(p.json()));
    return array;
  }
}
