package dev.kernelrunner.flow;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.kernelrunner.support.Processes;
import dev.kernelrunner.support.SseClient;
import dev.kernelrunner.support.SseClient.Frame;
import dev.kernelrunner.support.TestService;
import io.vertx.core.Vertx;
import io.vertx.junit5.VertxExtension;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** Stopping the service stops its local agents first, even one that ignores TERM, and waits until they are gone. */
@ExtendWith(VertxExtension.class)
class ShutdownTest {

  @Test
  void stoppingTheServiceLeavesNoAgentRunning(Vertx vertx) throws Exception {
    TestService service = TestService.start(vertx, Map.of("LOCAL_MAX_CONCURRENT", "2"));
    String token = service.userToken("sam");
    long[] pids = new long[4];
    String[] codes = {"// agent: hang", "// agent: trap_term"};
    for (int i = 0; i < codes.length; i++) {
      String id = service.submit(token, codes[i]);
      try (SseClient stream = service.events(id, token, Map.of())) {
        Frame compiling = stream.nextOf("COMPILING", Duration.ofSeconds(20));
        assertNotNull(compiling);
        pids[2 * i] = compiling.data().getLong("agent_pid");
        pids[2 * i + 1] = compiling.data().getLong("child_pid");
      }
    }
    for (long pid : pids) {
      assertTrue(Processes.alive(pid));
    }
    service.stop();
    for (long pid : pids) {
      assertFalse(Processes.alive(pid), "process " + pid + " outlived the service");
    }
  }
}
