package dev.kernelrunner.dstack;

import dev.kernelrunner.config.AppConfig;
import io.vertx.core.json.DecodeException;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The task and fleet configuration templates ({@code conf/dstack/*.json}, or the copies built into the jar).
 * They are JSON, which is valid YAML: the service fills fields in as values, never by pasting text, so no
 * value (user-controlled or not) can change the document's structure.
 */
public final class Templates {
  private Templates() {}

  /** Reads {@code file}, or the bundled {@code /dstack/<file name>} when the file does not exist. Blocking. */
  public static JsonObject load(Path file) throws IOException {
    String text;
    if (Files.isRegularFile(file)) {
      text = Files.readString(file);
    } else {
      try (InputStream in = Templates.class.getResourceAsStream("/dstack/" + file.getFileName())) {
        if (in == null) {
          throw new IOException("no dstack template at " + file.toAbsolutePath() + " and none built into the jar");
        }
        text = new String(in.readAllBytes(), StandardCharsets.UTF_8);
      }
    }
    try {
      return new JsonObject(text);
    } catch (DecodeException e) {
      throw new IOException("the dstack template " + file + " is not a JSON object: " + e.getMessage());
    }
  }

  /**
   * A task run's configuration from the task template (core/models/runs.py:543-620): every value set as a value,
   * on the AMD fleet's GPU, with {@code env} added to the template's environment.
   */
  public static JsonObject task(JsonObject template, AppConfig.Amd amd, String runName, JsonObject env) {
    JsonObject task = template.copy();
    task.put("type", "task").put("name", runName);
    task.remove("files"); // the CLI's way; the server reads file_archives (the run spec's)
    JsonObject resources = task.getJsonObject("resources", new JsonObject());
    task.put("resources", resources.put("gpu", gpuSpec(amd.gpuType(), amd.gpuMemory())));
    task.put("fleets", new JsonArray().add(amd.fleetName()));
    task.put("spot_policy", amd.spotPolicy());
    Object templateEnv = task.getValue("env");
    JsonObject environment = templateEnv instanceof JsonObject object ? object : new JsonObject();
    task.put("env", environment.mergeIn(env));
    return task;
  }

  /** {@code MI300X:192GB:1}: dstack's GPU spec (name, memory, count). */
  public static String gpuSpec(String gpuType, String memory) {
    return gpuType + ":" + memory + ":1";
  }
}
