package dev.kernelrunner.http;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.kernelrunner.support.OpenApiCheck;
import dev.kernelrunner.support.Ports;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The description under two linters, pinned in src/test/openapi-lint (package.json, package-lock.json):
 * redocly's recommended rules (redocly.yaml) and Spectral's spectral:oas (.spectral.yaml). Any error or
 * warning fails, and the findings are printed. A copy of the description with known faults shows that both
 * linters are really run and read.
 */
class OpenApiLintTest {
  private static final Path LINT = Path.of("src/test/openapi-lint").toAbsolutePath();
  private static final Map<String, String> PINNED = Map.of(
      "@redocly/cli", "node_modules/@redocly/cli/package.json",
      "@stoplight/spectral-cli", "node_modules/@stoplight/spectral-cli/package.json");
  private static String node;

  @BeforeAll
  static void install() throws Exception {
    node = Ports.installed("node", "nodejs");
    JsonObject wanted = new JsonObject(Files.readString(LINT.resolve("package.json"))).getJsonObject("dependencies");
    boolean current = true;
    for (var pinned : PINNED.entrySet()) {
      Path installed = LINT.resolve(pinned.getValue());
      current &= Files.exists(installed) && wanted.getString(pinned.getKey())
          .equals(new JsonObject(Files.readString(installed)).getString("version"));
    }
    if (!current) {
      Result ci = run(List.of(Ports.installed("npm", "npm"), "ci", "--no-audit", "--no-fund"), 300);
      assertEquals(0, ci.code, "npm ci in " + LINT + ":\n" + ci.out + ci.err);
    }
  }

  @Test
  void redoclyFindsNothing() throws Exception {
    List<String> findings = redocly(OpenApiCheck.DOCUMENT.toAbsolutePath());
    assertTrue(findings.isEmpty(), "redocly (recommended): " + findings.size() + " errors and warnings\n"
        + String.join("\n", findings));
  }

  @Test
  void spectralFindsNothing() throws Exception {
    List<String> findings = spectral(OpenApiCheck.DOCUMENT.toAbsolutePath());
    assertTrue(findings.isEmpty(), "Spectral (spectral:oas): " + findings.size() + " errors and warnings\n"
        + String.join("\n", findings));
  }

  /** Without servers and with an array schema that lost its items, both linters must say so. */
  @Test
  void aFaultyDescriptionFails() throws Exception {
    JsonObject document = new JsonObject(Files.readString(OpenApiCheck.DOCUMENT));
    document.remove("servers");
    JsonObject submissions = document.getJsonObject("components").getJsonObject("schemas")
        .getJsonObject("SubmissionPage").getJsonObject("properties").getJsonObject("submissions");
    submissions.remove("items");
    Path faulty = Files.createDirectories(Path.of("target/openapi-lint").toAbsolutePath()).resolve("faulty.json");
    Files.writeString(faulty, document.encodePrettily());
    String redocly = String.join("\n", redocly(faulty));
    assertTrue(redocly.contains("no-empty-servers"), redocly);
    String spectral = String.join("\n", spectral(faulty));
    assertTrue(spectral.contains("oas3-api-servers") && spectral.contains("array-items"), spectral);
  }

  /** redocly's errors and warnings, one line each. */
  private static List<String> redocly(Path document) throws Exception {
    Result lint = run(List.of(node, "node_modules/@redocly/cli/bin/cli.js", "lint", "--config", "redocly.yaml",
        "--format", "json", document.toString()), 60);
    JsonObject report = parse(lint, "redocly");
    List<String> findings = new ArrayList<>();
    for (Object each : report.getJsonArray("problems")) {
      JsonObject problem = (JsonObject) each;
      if ("error".equals(problem.getString("severity")) || "warn".equals(problem.getString("severity"))) {
        JsonArray location = problem.getJsonArray("location", new JsonArray());
        String pointer = location.isEmpty() ? "" : location.getJsonObject(0).getString("pointer", "");
        findings.add(problem.getString("severity") + " " + problem.getString("ruleId") + " " + pointer + ": "
            + problem.getString("message"));
      }
    }
    JsonObject totals = report.getJsonObject("totals");
    assertEquals(totals.getInteger("errors") + totals.getInteger("warnings"), findings.size(),
        "redocly's totals and its problems: " + totals);
    return findings;
  }

  /** Spectral's errors and warnings (severity 0 and 1), one line each. */
  private static List<String> spectral(Path document) throws Exception {
    Result lint = run(List.of(node, "node_modules/@stoplight/spectral-cli/dist/index.js", "lint",
        "--ruleset", ".spectral.yaml", "--format", "json", "--quiet", document.toString()), 60);
    String out = lint.out.strip();
    JsonArray report;
    try {
      report = out.startsWith("No results") || out.isEmpty() ? new JsonArray() : new JsonArray(out);
    } catch (RuntimeException e) {
      throw new AssertionError("Spectral's output is not its JSON report (exit " + lint.code + "):\n" + lint.out
          + lint.err, e);
    }
    List<String> findings = new ArrayList<>();
    for (Object each : report) {
      JsonObject result = (JsonObject) each;
      int severity = result.getInteger("severity");
      if (severity <= 1) {
        int line = result.getJsonObject("range").getJsonObject("start").getInteger("line") + 1;
        findings.add((severity == 0 ? "error " : "warn ") + result.getString("code") + " line " + line + " "
            + String.join(".", result.getJsonArray("path").stream().map(String::valueOf).toList()) + ": "
            + result.getString("message"));
      }
    }
    return findings;
  }

  private static JsonObject parse(Result lint, String linter) {
    try {
      return new JsonObject(lint.out);
    } catch (RuntimeException e) {
      throw new AssertionError(linter + "'s output is not its JSON report (exit " + lint.code + "):\n" + lint.out
          + lint.err, e);
    }
  }

  private record Result(int code, String out, String err) {}

  private static Result run(List<String> argv, int timeoutSeconds) throws Exception {
    File out = File.createTempFile("openapi-lint", ".out");
    File err = File.createTempFile("openapi-lint", ".err");
    try {
      ProcessBuilder builder = new ProcessBuilder(argv).directory(LINT.toFile())
          .redirectOutput(out).redirectError(err);
      builder.environment().put("NO_COLOR", "1");
      builder.environment().put("REDOCLY_TELEMETRY", "off");
      builder.environment().put("REDOCLY_SUPPRESS_UPDATE_NOTICE", "true");
      Process process = builder.start();
      if (!process.waitFor(timeoutSeconds, TimeUnit.SECONDS)) {
        process.destroyForcibly();
        throw new AssertionError(String.join(" ", argv) + " ran past " + timeoutSeconds + " s");
      }
      return new Result(process.exitValue(), Files.readString(out.toPath(), StandardCharsets.UTF_8),
          Files.readString(err.toPath(), StandardCharsets.UTF_8));
    } finally {
      out.delete();
      err.delete();
    }
  }
}
