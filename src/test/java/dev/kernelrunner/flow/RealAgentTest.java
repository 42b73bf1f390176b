package dev.kernelrunner.flow;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.kernelrunner.support.TestService;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonObject;
import io.vertx.junit5.VertxExtension;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** The real remote agent, as the service starts it by default, and the agent's own unit tests. */
@ExtendWith(VertxExtension.class)
class RealAgentTest {

  @Test
  void agentUnitTestsPass() throws Exception {
    Process tests = new ProcessBuilder("python3", "-m", "unittest", "discover", "-s", "tests", "-t", ".")
        .directory(Path.of("remote-agent").toFile()).redirectErrorStream(true).start();
    String output = new String(tests.getInputStream().readAllBytes());
    assertTrue(tests.waitFor(5, TimeUnit.MINUTES));
    assertEquals(0, tests.exitValue(), output);
    assertTrue(output.contains("OK"), output);
  }

  /** CI machines have no GPU: the default agent must say so as one clean ERROR event, not crash. */
  @Test
  void defaultAgentWithoutAGpuReportsAnError(Vertx vertx) throws Exception {
    Assumptions.assumeNoGpu();
    Map<String, String> realAgent = Map.of(
        "AGENT_COMMAND", "python3 -m remote_agent",
        "AGENT_WORKDIR", dev.kernelrunner.support.TestAgents.path("remote-agent").toString());
    try (TestService service = TestService.start(vertx, realAgent)) {
      String token = service.userToken("realuser");
      String id = service.submit(token, "__global__ void solution(const float* input, float alpha, float* output, "
          + "size_t M, size_t N) {}");
      JsonObject stored = service.awaitFinished(id, Duration.ofSeconds(60));
      assertEquals("ERROR", stored.getString("status"));
      assertTrue(stored.getJsonObject("error").getString("message").contains("no GPU"), stored.encode());
    }
  }

  /** Skips the no-GPU check where a GPU is present (the device machine). */
  static final class Assumptions {
    static void assumeNoGpu() {
      boolean gpu = List.of("/usr/bin/nvidia-smi", "/usr/local/bin/nvidia-smi", "/opt/rocm/bin/rocminfo").stream()
          .anyMatch(p -> Path.of(p).toFile().canExecute());
      org.junit.jupiter.api.Assumptions.assumeFalse(gpu, "a GPU is present");
    }
  }
}
