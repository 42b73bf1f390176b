package dev.kernelrunner.flow;

import static dev.kernelrunner.support.SseClient.types;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

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

/**
 * A result published before the profiler checked its times (BENCHMARKED, timing "pending"), then the verdict
 * (VERIFIED): stored once into the result, streamed, and said for the agent when it ends without one.
 */
@ExtendWith(VertxExtension.class)
class TimingVerdictTest {
  private static final Duration WAIT = Duration.ofSeconds(30);
  private static TestService service;
  private static String user;

  @BeforeAll
  static void start(Vertx vertx) throws Exception {
    service = TestService.start(vertx, Map.of("LOCAL_MAX_CONCURRENT", "4", "MAX_ACTIVE_PER_USER", "10"));
    user = service.userToken("tim");
  }

  @AfterAll
  static void stop() throws Exception {
    service.close();
  }

  @Test
  void theVerdictFollowsTheResultIntoTheStreamAndTheStoredResult() throws Exception {
    String id = service.submit(user, "// agent: ok\n// delay: 0.02\n// timing: unverified");
    List<Frame> frames = follow(id);
    List<String> types = types(frames);
    assertEquals(List.of("BENCHMARKED", "VERIFIED"), types.subList(types.size() - 2, types.size()), types.toString());
    assertEquals("pending", frames.get(frames.size() - 2).data().getJsonObject("verification")
        .getJsonObject("timing").getString("status"));
    // Nothing else after the end: the late BENCHMARK_RESULT and the second verdict were dropped.
    assertEquals(1, types.stream().filter("VERIFIED"::equals).count());
    JsonObject result = service.get("/api/submissions/" + id, user).json().getJsonObject("result");
    assertEquals("unverified", result.getJsonObject("verification").getJsonObject("timing").getString("status"));
    assertTrue(result.getBoolean("unverified"));
    assertEquals("BENCHMARKED", service.get("/api/submissions/" + id, user).json().getString("status"));

    String good = service.submit(user, "// agent: ok\n// delay: 0.02\n// timing: verified");
    follow(good);
    JsonObject verified = service.get("/api/submissions/" + good, user).json().getJsonObject("result");
    assertEquals("verified", verified.getJsonObject("verification").getJsonObject("timing").getString("status"));
    assertFalse(verified.getBoolean("unverified"));
  }

  @Test
  void aVerdictThatComesRightBehindTheResultIsStoredWithIt() throws Exception {
    // The worker posts both in one batch behind the test results: the verdict, stored through an address of its
    // own, once waited for the result still queued in the submission's grouped writes, and those for it.
    for (int i = 0; i < 3; i++) {
      String id = service.submit(user, "// agent: ok\n// delay: 0\n// timing: verified\n// verdict-after: 0");
      service.awaitFinished(id, WAIT);
      long deadline = System.nanoTime() + WAIT.toNanos();
      JsonObject timing = null;
      while (System.nanoTime() < deadline) {
        timing = service.get("/api/submissions/" + id, user).json().getJsonObject("result")
            .getJsonObject("verification").getJsonObject("timing");
        if (!"pending".equals(timing.getString("status"))) {
          break;
        }
        Thread.sleep(50);
      }
      assertEquals("verified", timing.getString("status"), timing.encode());
    }
  }

  @Test
  void aClientThatComesWhileTheTimesAreCheckedStaysForTheVerdict() throws Exception {
    String id = service.submit(user, "// agent: ok\n// delay: 0.02\n// timing: verified");
    int benchmarkedSeq;
    try (SseClient events = service.events(id, user, Map.of())) {
      benchmarkedSeq = events.nextOf("BENCHMARKED", WAIT).id();
    }
    // The submission has ended (BENCHMARKED), the verdict is a second away: a new stream waits for it.
    assertEquals("BENCHMARKED", service.get("/api/submissions/" + id, user).json().getString("status"));
    try (SseClient late = service.events(id, user, Map.of("Last-Event-ID", String.valueOf(benchmarkedSeq)))) {
      List<Frame> frames = late.untilEnd(WAIT);
      assertEquals(List.of("VERIFIED"), types(frames));
    }
  }

  @Test
  void anAgentThatEndsWithoutTheVerdictHasItSaidForIt() throws Exception {
    String id = service.submit(user, "// agent: ok\n// delay: 0.02\n// timing: never");
    List<Frame> frames = follow(id);
    Frame verdict = frames.get(frames.size() - 1);
    assertEquals("VERIFIED", verdict.event());
    assertEquals("not_checked", verdict.data().getJsonObject("timing").getString("status"));
    JsonObject timing = service.get("/api/submissions/" + id, user).json().getJsonObject("result")
        .getJsonObject("verification").getJsonObject("timing");
    assertEquals("not_checked", timing.getString("status"));
    assertTrue(timing.getString("reason").contains("ended before"), timing.encode());
  }

  /** The submission's stream from the start to its end. */
  private static List<Frame> follow(String id) throws Exception {
    try (SseClient events = service.events(id, user, Map.of())) {
      return events.untilEnd(WAIT);
    }
  }
}
