package dev.kernelrunner.baselines;

import io.vertx.core.json.JsonObject;
import java.time.OffsetDateTime;
import java.time.format.DateTimeParseException;
import java.util.List;

/**
 * A baseline job's BASELINED (remote-agent/remote_agent/agent.py {@code baselines}) as a baselines file, the form
 * remote-agent/selftest/baselines.py writes and the store loads: {gpu_type, hardware, driver, torch, triton, cuda
 * or hip, measured_at, method, problems: {slug: {dtype: {method: {test name: figures}}}}}. The GPU type is the
 * job's, never what its agent says.
 */
public final class BaselineFile {
  /** The methods a baseline has (baseline.py METHODS). */
  public static final List<String> METHODS = List.of("eager", "torch_compile");
  /** The device and software fields of a baselines file, which the store keeps as each row's {@code hardware}. */
  public static final List<String> VERSIONS = List.of("hardware", "driver", "torch", "triton", "cuda", "hip");

  private BaselineFile() {}

  /** Where a job's baselines come from, as the store's {@code source} names it. */
  public static String source(String submissionId) {
    return "job " + submissionId;
  }

  /** The file of a job's BASELINED {@code fields}; IllegalArgumentException naming what is missing or malformed. */
  public static JsonObject ofJob(String gpuType, JsonObject fields) {
    String problem = text(fields, "problem");
    String dtype = text(fields, "dtype");
    String measuredAt = text(fields, "measured_at");
    try {
      OffsetDateTime.parse(measuredAt);
    } catch (DateTimeParseException e) {
      throw new IllegalArgumentException("measured_at is no ISO-8601 instant: " + measuredAt);
    }
    if (!(fields.getValue("tests") instanceof JsonObject tests)) {
      throw new IllegalArgumentException("tests is missing");
    }
    JsonObject methods = new JsonObject();
    for (String method : METHODS) {
      if (!(tests.getValue(method) instanceof JsonObject figures) || figures.isEmpty()) {
        throw new IllegalArgumentException("tests." + method + " is missing");
      }
      methods.put(method, figures);
    }
    JsonObject file = new JsonObject().put("gpu_type", gpuType).put("measured_at", measuredAt)
        .put("method", fields.getValue("method"))
        .put("problems", new JsonObject().put(problem, new JsonObject().put(dtype, methods)));
    JsonObject hardware = fields.getValue("hardware") instanceof JsonObject h ? h : new JsonObject();
    for (String key : VERSIONS) {
      if (hardware.getValue(key) instanceof String version) {
        file.put(key, version);
      }
    }
    return file;
  }

  private static String text(JsonObject fields, String name) {
    if (!(fields.getValue(name) instanceof String value) || value.isBlank()) {
      throw new IllegalArgumentException(name + " is missing");
    }
    return value;
  }
}
