package dev.kernelrunner.flow;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import dev.kernelrunner.support.Processes;
import dev.kernelrunner.support.SseClient;
import dev.kernelrunner.support.SseClient.Frame;
import dev.kernelrunner.support.TestService;
import io.vertx.core.Vertx;
import io.vertx.junit5.VertxExtension;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** A submission past SUBMISSION_TIMEOUT_SECONDS (2 here) is killed and ends TIME_LIMIT_EXCEEDED. */
@ExtendWith(VertxExtension.class)
class TimeLimitTest {
  private static TestService service;

  @BeforeAll
  static void start(Vertx vertx) throws Exception {
    service = TestService.start(vertx, Map.of("SUBMISSION_TIMEOUT_SECONDS", "2"));
  }

  @AfterAll
  static void stop() throws Exception {
    service.close();
  }

  @Test
  void hangPastTheLimitIsKilled() throws Exception {
    String token = service.userToken("judy");
    String id = service.submit(token, "// agent: hang");
    try (SseClient stream = service.events(id, token, Map.of())) {
      List<Frame> frames = stream.untilEnd(Duration.ofSeconds(20));
      Frame compiling = frames.get(2);
      Frame last = frames.get(frames.size() - 1);
      assertEquals(List.of("IN_QUEUE", "PROVISIONING", "COMPILING", "TIME_LIMIT_EXCEEDED"),
          frames.stream().map(Frame::event).toList());
      assertEquals(2, last.data().getInteger("limit_seconds"));
      assertEquals("compiling", last.data().getString("phase"));
      Thread.sleep(200);
      assertFalse(Processes.alive(compiling.data().getLong("agent_pid")));
      assertFalse(Processes.alive(compiling.data().getLong("child_pid")));
    }
    assertEquals("TIME_LIMIT_EXCEEDED", service.submission(id).getJsonObject("error").getString("type"));
  }
}
