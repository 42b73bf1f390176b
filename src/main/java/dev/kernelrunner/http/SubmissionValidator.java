package dev.kernelrunner.http;

import dev.kernelrunner.config.AppConfig.GpuType;
import dev.kernelrunner.model.Mode;
import dev.kernelrunner.model.NewSubmission;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.Optional;

/** Checks a submission request field by field, naming every field that is wrong. */
final class SubmissionValidator {
  /** The dtype of a submission (and a leaderboard) that names none. */
  static final String DEFAULT_DTYPE = "float32";

  private SubmissionValidator() {}

  /** The checked request: {@code errors} empty when valid; {@code tooLarge} when the code is over the limit. */
  record Result(JsonObject body, JsonArray errors, boolean tooLarge, Mode mode, String dtype) {
    /** Cancelled when its clients leave: created as a stream, or asked for ({@code cancel_on_disconnect}). */
    NewSubmission submission(String userId, boolean stream) {
      return new NewSubmission(userId, body.getString("problem"), body.getString("language"),
          body.getString("gpu_type"), dtype, body.getString("code"), mode,
          stream || body.getBoolean("cancel_on_disconnect", false));
    }
  }

  static Result validate(JsonObject body, ProblemCatalog problems, Map<String, GpuType> gpuTypes, int maxCodeBytes) {
    JsonArray errors = new JsonArray();
    Optional<ProblemCatalog.Problem> problem = Optional.empty();
    String problemName = text(body, "problem", "is required (see GET /api/problems)", errors);
    if (problemName != null) {
      problem = problems.get(problemName);
      if (problem.isEmpty()) {
        errors.add(ApiError.field("problem", "unknown problem '" + problemName + "' (see GET /api/problems)"));
      }
    }
    String language = text(body, "language", "is required: 'cuda' or 'hip'", errors);
    if (language != null && !ProblemCatalog.LANGUAGES.contains(language)) {
      errors.add(ApiError.field("language", "must be 'cuda' or 'hip'"));
    } else if (language != null && problem.isPresent() && !problem.get().languages().contains(language)) {
      errors.add(ApiError.field("language", "problem '" + problemName + "' takes " + problem.get().languages()));
    }
    String gpuType = text(body, "gpu_type", "is required, one of " + gpuTypes.keySet(), errors);
    if (gpuType != null && !gpuTypes.containsKey(gpuType)) {
      errors.add(ApiError.field("gpu_type", "unknown GPU type '" + gpuType + "', one of " + gpuTypes.keySet()));
    }
    String dtype = body.getValue("dtype") == null ? DEFAULT_DTYPE : text(body, "dtype", "", errors);
    if (dtype != null && problem.isPresent() && !problem.get().dtypes().contains(dtype)) {
      errors.add(ApiError.field("dtype", "problem '" + problemName + "' takes " + problem.get().dtypes()));
    }
    Mode mode = Mode.BENCHMARK;
    if (body.getValue("mode") != null) {
      String given = text(body, "mode", "", errors);
      Optional<Mode> parsed = Mode.parse(given).filter(Mode::submittable);
      if (given != null && parsed.isEmpty()) {
        errors.add(ApiError.field("mode", "must be 'benchmark', 'check' or 'profile'"));
      }
      mode = parsed.orElse(Mode.BENCHMARK);
    }
    if (body.containsKey("cancel_on_disconnect") && !(body.getValue("cancel_on_disconnect") instanceof Boolean)) {
      errors.add(ApiError.field("cancel_on_disconnect", "must be true or false"));
    }
    boolean tooLarge = false;
    String source = text(body, "code", "is required and must not be empty", errors);
    if (source != null) {
      int bytes = source.getBytes(StandardCharsets.UTF_8).length;
      if (bytes > maxCodeBytes) {
        tooLarge = true;
        errors.add(ApiError.field("code", "is " + bytes + " bytes; at most " + maxCodeBytes + " are accepted"));
      } else if (source.indexOf('\0') >= 0) {
        // Source text has no use for it, and PostgreSQL's text cannot hold it.
        errors.add(ApiError.field("code", "must not contain NUL characters (U+0000)"));
      }
    }
    return new Result(body, errors, tooLarge, mode, dtype);
  }

  /** A string field: null (and the error added) when missing, of another JSON type, or blank. */
  private static String text(JsonObject body, String field, String whenMissing, JsonArray errors) {
    Object value = body.getValue(field);
    if (value == null) {
      errors.add(ApiError.field(field, whenMissing));
      return null;
    }
    if (!(value instanceof String s)) {
      errors.add(ApiError.field(field, "must be a string, not " + jsonType(value)));
      return null;
    }
    if (s.isBlank()) {
      errors.add(ApiError.field(field, "must not be empty"));
      return null;
    }
    return s;
  }

  private static String jsonType(Object value) {
    if (value instanceof Number) {
      return "a number";
    }
    if (value instanceof Boolean) {
      return "true/false";
    }
    if (value instanceof JsonArray) {
      return "an array";
    }
    return value instanceof JsonObject ? "an object" : "a " + value.getClass().getSimpleName();
  }
}
