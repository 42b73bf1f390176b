package dev.kernelrunner.flow;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.kernelrunner.support.FakeDstack;
import dev.kernelrunner.support.Ports;
import dev.kernelrunner.support.TempDirs;
import dev.kernelrunner.support.TestService;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonObject;
import io.vertx.junit5.VertxExtension;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The web client in a real browser: headless Chromium (Debian's package) driven by playwright-core (npm)
 * through src/test/e2e/e2e.mjs, against the real service with the test agent. Screenshots of the main states
 * go to target/e2e-screenshots (the ones in docs/screenshots come from this run).
 */
@ExtendWith(VertxExtension.class)
class WebClientE2ETest {
  private static final Path E2E = Path.of("src/test/e2e").toAbsolutePath();

  @Test
  void theWebClientWorksInABrowser(Vertx vertx) throws Exception {
    String node = Ports.installed("node", "nodejs");
    String chromium = Ports.installed("chromium", "chromium");
    if (!Files.isDirectory(E2E.resolve("node_modules/playwright-core"))) {
      assertEquals(0, run(List.of(Ports.installed("npm", "npm"), "ci", "--no-audit", "--no-fund"), Map.of(), 300,
          new StringBuilder()),
          "npm ci in src/test/e2e");
    }
    // MI300X through the fake dstack CLI (slow enough to watch its provisioning), beside the local type.
    try (FakeDstack fake = FakeDstack.start(new JsonObject().put("step_seconds", 1.5)
             .put("cost_usd", 0.0123));
         TestService service = TestService.start(vertx, withAll(fake.serviceEnv(), Map.of("LOCAL_MAX_CONCURRENT", "3",
             "MAX_ACTIVE_PER_USER", "20", "DISCONNECT_GRACE_SECONDS", "5", "BASELINES_DIR", localBaselines())))) {
      String user = service.userToken("kim");
      // Another user with a board entry of their own, and one whose history is longer than a page.
      String other = service.userToken("lee");
      String pager = service.userToken("pat");
      Path shots = Path.of("target/e2e-screenshots").toAbsolutePath();
      StringBuilder failed = new StringBuilder();
      int code = run(List.of(node, E2E.resolve("e2e.mjs").toString()), Map.of(
          "BASE_URL", "http://127.0.0.1:" + service.port(), "USER_TOKEN", user,
          "ADMIN_TOKEN", TestService.ADMIN_TOKEN, "OTHER_TOKEN", other, "PAGER_TOKEN", pager,
          "CHROMIUM", chromium, "SHOTS", shots.toString()), 300, failed);
      assertEquals(0, code, "browser scenarios (output above):" + failed);
      assertTrue(Files.exists(shots.resolve("benchmarked.png")));
    }
  }

  /**
   * A baselines folder: the shipped ones (conf/baselines), and leaky-relu's on the local type (its five tests, as the
   * replayed transcript names them).
   */
  private static String localBaselines() throws Exception {
    JsonObject eager = new JsonObject();
    JsonObject compiled = new JsonObject();
    for (String name : List.of("1 x 1", "33 x 257", "1000 x 1000", "4096 x 4097", "8192 x 8192")) {
      eager.put(name, new JsonObject().put("median", 0.5).put("mean", 0.5).put("std", 0.0).put("min", 0.5)
          .put("max", 0.5).put("samples", 100));
      compiled.put(name, eager.getJsonObject(name).copy().put("median", 0.25));
    }
    Path dir = TempDirs.directory("baselines");
    try (var shipped = Files.list(Path.of("conf/baselines"))) {
      for (Path file : shipped.filter(f -> f.toString().endsWith(".json")).toList()) {
        Files.copy(file, dir.resolve(file.getFileName()));
      }
    }
    Files.writeString(dir.resolve("local.json"), new JsonObject().put("gpu_type", "local").put("hardware", "Test GPU")
        .put("driver", "1").put("torch", "2").put("triton", "3").put("cuda", "13")
        .put("measured_at", "2026-11-26T00:00:00Z").put("problems", new JsonObject().put("leaky-relu",
            new JsonObject().put("float32", new JsonObject().put("eager", eager).put("torch_compile", compiled))))
        .encode());
    return dir.toString();
  }

  /**
   * Runs {@code argv} in src/test/e2e, its output echoed; the lines that say what failed (a failed scenario's first
   * lines, the page problems) also go to {@code failed}, for the assertion's message: a CI log's tail shows that, not
   * the echoed output.
   */
  private static int run(List<String> argv, Map<String, String> env, int timeoutSeconds, StringBuilder failed)
      throws Exception {
    ProcessBuilder builder = new ProcessBuilder(argv).directory(E2E.toFile()).redirectErrorStream(true);
    builder.environment().putAll(env);
    Process process = builder.start();
    Thread echo = new Thread(() -> {
      try (var lines = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
        int keep = 0;
        for (String line = lines.readLine(); line != null; line = lines.readLine()) {
          System.out.println(line);
          keep = line.startsWith("FAIL ") ? 4 : line.startsWith("page problems") ? 20 : keep;
          if (keep > 0) {
            keep--;
            failed.append("\n  ").append(line.length() > 300 ? line.substring(0, 300) + "..." : line);
          }
        }
      } catch (IOException e) {
        // the process is gone
      }
    });
    echo.start();
    if (!process.waitFor(timeoutSeconds, TimeUnit.SECONDS)) {
      process.destroyForcibly();
      throw new AssertionError(String.join(" ", argv) + " ran past " + timeoutSeconds + " s");
    }
    echo.join(5000);
    return process.exitValue();
  }

  private static Map<String, String> withAll(Map<String, String> base, Map<String, String> more) {
    Map<String, String> all = new HashMap<>(base);
    all.putAll(more);
    return all;
  }
}
