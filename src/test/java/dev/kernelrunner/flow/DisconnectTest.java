package dev.kernelrunner.flow;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.kernelrunner.support.Processes;
import dev.kernelrunner.support.SseClient;
import dev.kernelrunner.support.SseClient.Frame;
import dev.kernelrunner.support.TestService;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonObject;
import io.vertx.junit5.VertxExtension;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** A stream-created submission whose clients all leave is cancelled after DISCONNECT_GRACE_SECONDS (2 here). */
@ExtendWith(VertxExtension.class)
class DisconnectTest {
  private static final Duration WAIT = Duration.ofSeconds(30);
  private static TestService service;
  private static String erin;

  @BeforeAll
  static void start(Vertx vertx) throws Exception {
    service = TestService.start(vertx, Map.of("LOCAL_MAX_CONCURRENT", "3"));
    erin = service.userToken("erin");
  }

  @AfterAll
  static void stop() throws Exception {
    service.close();
  }

  @Test
  void lastClientGoneWithoutReturnCancels() throws Exception {
    String id;
    long agentPid;
    try (SseClient stream = service.submitStreaming(erin, "// agent: ok\n// delay: 3")) {
      Frame compiling = stream.nextOf("COMPILING", WAIT);
      id = compiling.data().getString("submission_id");
      agentPid = compiling.data().getLong("agent_pid");
    }
    JsonObject stored = service.awaitFinished(id, Duration.ofSeconds(15));
    assertEquals("CANCELLED", stored.getString("status"));
    assertEquals("client_disconnected", stored.getString("cancel_reason"));
    assertEquals("system", stored.getString("cancelled_by"));
    Thread.sleep(200);
    assertFalse(Processes.alive(agentPid));
  }

  @Test
  void reconnectWithinTheGracePeriodKeepsItRunning() throws Exception {
    String id;
    int lastSeen;
    try (SseClient stream = service.submitStreaming(erin, "// agent: ok\n// delay: 0.7")) {
      Frame compiling = stream.nextOf("COMPILING", WAIT);
      id = compiling.data().getString("submission_id");
      lastSeen = compiling.id();
    }
    Thread.sleep(1000);
    try (SseClient resumed = service.events(id, erin, Map.of("Last-Event-ID", String.valueOf(lastSeen)))) {
      List<Frame> rest = resumed.untilEnd(WAIT);
      assertEquals(lastSeen + 1, rest.get(0).id(), "resumes right after the last event seen");
      assertEquals("BENCHMARKED", rest.get(rest.size() - 1).event());
    }
    assertEquals("BENCHMARKED", service.submission(id).getString("status"));
  }

  @Test
  void submissionsCreatedWithoutAStreamAreNotAffected() throws Exception {
    String id = service.submit(erin, "// agent: ok\n// delay: 0.8");
    try (SseClient stream = service.events(id, erin, Map.of())) {
      assertNotNull(stream.nextOf("COMPILING", WAIT));
    }
    JsonObject stored = service.awaitFinished(id, WAIT);
    assertEquals("BENCHMARKED", stored.getString("status"));
    assertTrue(stored.getString("cancel_reason") == null);
  }
}
