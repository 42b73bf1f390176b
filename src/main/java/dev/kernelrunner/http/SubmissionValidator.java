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
    String problemName = text(body, "problem");
    if (problemName == null) {
      errors.add(ApiError.field("problem", "is required"));
    } else {
      problem = problems.get(problemName);
      if (problem.isEmpty()) {
        errors.add(ApiError.field("problem", "unknown problem '" + problemName + "' (see GET /api/problems)"));
      }
    }
    String language = text(body, "language");
    if (language == null) {
      errors.add(ApiError.field("language", "is required: 'cuda' or 'hip'"));
    } else if (!ProblemCatalog.LANGUAGES.contains(language)) {
      errors.add(ApiError.field("language", "must be 'cuda' or 'hip'"));
    } else if (problem.isPresent() && !problem.get().languages().contains(language)) {
      errors.add(ApiError.field("language", "problem '" + problemName + "' takes " + problem.get().languages()));
    }
    String gpuType = text(body, "gpu_type");
    if (gpuType == null) {
      errors.add(ApiError.field("gpu_type", "is required, one of " + gpuTypes.keySet()));
    } else if (!gpuTypes.containsKey(gpuType)) {
      errors.add(ApiError.field("gpu_type", "unknown GPU type '" + gpuType + "', one of " + gpuTypes.keySet()));
    }
    String dtype = body.containsKey("dtype") ? text(body, "dtype") : "float32";
    if (dtype == null) {
      errors.add(ApiError.field("dtype", "must be a non-empty string such as 'float32'"));
    } else if (problem.isPresent() && !problem.get().dtypes().contains(dtype)) {
      errors.add(ApiError.field("dtype", "problem '" + problemName + "' takes " + problem.get().dtypes()));
    }
    Mode mode = Mode.BENCHMARK;
    if (body.containsKey("mode")) {
      Optional<Mode> parsed = Mode.parse(text(body, "mode"));
      if (parsed.isEmpty()) {
        errors.add(ApiError.field("mode", "must be 'benchmark' or 'check'"));
      } else {
        mode = parsed.get();
      }
    }
    if (body.containsKey("cancel_on_disconnect") && !(body.getValue("cancel_on_disconnect") instanceof Boolean)) {
      errors.add(ApiError.field("cancel_on_disconnect", "must be true or false"));
    }
    boolean tooLarge = false;
    Object code = body.getValue("code");
    if (!(code instanceof String source) || source.isBlank()) {
      errors.add(ApiError.field("code", "is required and must not be empty"));
    } else {
      int bytes = source.getBytes(StandardCharsets.UTF_8).length;
      if (bytes > maxCodeBytes) {
        tooLarge = true;
        errors.add(ApiError.field("code", "is " + bytes + " bytes; at most " + maxCodeBytes + " are accepted"));
      }
    }
    return new Result(body, errors, tooLarge, mode, dtype);
  }

  private static String text(JsonObject body, String field) {
    Object value = body.getValue(field);
    return value instanceof String s && !s.isBlank() ? s : null;
  }
}
