package dev.kernelrunner.http;

import dev.kernelrunner.config.AppConfig;
import dev.kernelrunner.model.BaselineJobs;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * The body of {@code POST /api/admin/baselines}, checked: {@code {gpu_type, problems?: [slug], level?: N, dtypes?:
 * [dtype]}}: a baseline job for each problem named (else each of the level, else every problem) in each dtype
 * named that it takes (else each it takes). Every error names its field.
 */
final class BaselineRequest {
  private BaselineRequest() {}

  record Result(BaselineJobs jobs, JsonArray errors) {}

  static Result validate(JsonObject body, ProblemCatalog catalog, Map<String, AppConfig.GpuType> gpuTypes,
                         String requestedBy) {
    JsonArray errors = new JsonArray();
    Object gpuType = body.getValue("gpu_type");
    if (!(gpuType instanceof String type) || !gpuTypes.containsKey(type)) {
      errors.add(ApiError.field("gpu_type", "is required, one of " + gpuTypes.keySet()));
    }
    List<ProblemCatalog.Problem> problems = new ArrayList<>();
    Object named = body.getValue("problems");
    Object level = body.getValue("level");
    if (named != null && level != null) {
      errors.add(ApiError.field("level", "give problems or a level, not both"));
    } else if (named != null) {
      List<String> slugs = strings(named, "problems", errors);
      for (int i = 0; i < slugs.size(); i++) {
        int at = i;
        catalog.get(slugs.get(i)).ifPresentOrElse(problems::add, () -> errors.add(ApiError.field(
            "problems[" + at + "]", "no problem '" + slugs.get(at) + "' (see GET /api/problems)")));
      }
    } else if (level != null) {
      if (!(level instanceof Integer n)) {
        errors.add(ApiError.field("level", "must be a whole number"));
      } else {
        catalog.all().stream().filter(p -> n.equals(p.json().getInteger("level"))).forEach(problems::add);
        if (problems.isEmpty()) {
          errors.add(ApiError.field("level", "no problem is of level " + n));
        }
      }
    } else {
      problems.addAll(catalog.all());
    }
    List<String> dtypes = body.getValue("dtypes") == null ? null : strings(body.getValue("dtypes"), "dtypes", errors);
    List<BaselineJobs.Job> jobs = new ArrayList<>();
    for (ProblemCatalog.Problem problem : problems) {
      for (String dtype : problem.dtypes()) {
        if (dtypes == null || dtypes.contains(dtype)) {
          jobs.add(new BaselineJobs.Job(problem.slug(), dtype, problem.languages().get(0)));
        }
      }
    }
    if (errors.isEmpty() && jobs.isEmpty()) {
      errors.add(ApiError.field("dtypes", "none of the problems takes " + dtypes));
    }
    return new Result(errors.isEmpty() ? new BaselineJobs((String) gpuType, jobs, requestedBy) : null, errors);
  }

  private static List<String> strings(Object value, String field, JsonArray errors) {
    List<String> found = new ArrayList<>();
    if (!(value instanceof JsonArray array) || array.isEmpty()) {
      errors.add(ApiError.field(field, "must be a non-empty array of strings"));
      return found;
    }
    for (int i = 0; i < array.size(); i++) {
      if (array.getValue(i) instanceof String s) {
        found.add(s);
      } else {
        errors.add(ApiError.field(field + "[" + i + "]", "must be a string"));
      }
    }
    return found;
  }
}
