package dev.kernelrunner.flow;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.kernelrunner.support.SseClient;
import dev.kernelrunner.support.SseClient.Frame;
import dev.kernelrunner.support.TempDirs;
import dev.kernelrunner.support.TestDatabase;
import dev.kernelrunner.support.TestService;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonObject;
import io.vertx.junit5.VertxExtension;
import java.nio.file.Path;
import java.sql.Connection;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * A service that went away mid-run: on the next start, a running submission whose process is gone is put back
 * in line once (IN_QUEUE, reason "restarted"), a leftover agent process is killed, a queued one still runs,
 * and one that was already restarted before is failed, so nothing stays unfinished.
 */
@ExtendWith(VertxExtension.class)
class RestartReconciliationTest {
  private static final Duration WAIT = Duration.ofSeconds(40);

  @Test
  void restartRequeuesOnceKillsLeftoversAndFinishesEverything(Vertx vertx) throws Exception {
    String databaseUrl = TestDatabase.freshDatabase();
    Path dataDir = TempDirs.directory("kr-restart");
    // The child-process backend (LOCAL_WORKERS=false): a leftover agent is a pid the last run stored.
    Map<String, String> oneSlot = Map.of("LOCAL_MAX_CONCURRENT", "1", "LOCAL_WORKERS", "false");

    TestService first = TestService.start(vertx, oneSlot, databaseUrl, dataDir);
    String token = first.userToken("kate");
    String twice = first.submit(token, "// agent: ok");
    first.awaitFinished(twice, WAIT);
    String running = first.submit(token, "// agent: ok\n// delay: 0.4");
    String queued = first.submit(token, "// agent: ok");
    try (SseClient stream = first.events(running, token, Map.of())) {
      assertNotNull(stream.nextOf("COMPILING", WAIT));
    }
    first.stop();

    // As if the service had died hard: its agent lived on, and one submission had been restarted already.
    Process leftover = new ProcessBuilder("python3", "-c", "import time; time.sleep(120)", running).start();
    try (Connection db = ValidationTest.connect(databaseUrl)) {
      db.createStatement().execute("UPDATE submissions SET pid = " + leftover.pid() + " WHERE id = '" + running + "'");
      db.createStatement().execute("UPDATE submissions SET status = 'COMPILING', finished_at = NULL, "
          + "restart_count = 1 WHERE id = '" + twice + "'");
    }
    JsonObject beforeRestart = null;
    try (Connection db = ValidationTest.connect(databaseUrl)) {
      var rs = db.createStatement().executeQuery("SELECT status FROM submissions WHERE id = '" + running + "'");
      rs.next();
      beforeRestart = new JsonObject().put("status", rs.getString(1));
    }
    assertFalse(List.of("BENCHMARKED", "CANCELLED", "ERROR").contains(beforeRestart.getString("status")),
        "the first service left it unfinished: " + beforeRestart);

    try (TestService second = TestService.start(vertx, oneSlot, databaseUrl, dataDir)) {
      assertTrue(leftover.waitFor(10, java.util.concurrent.TimeUnit.SECONDS), "leftover agent killed");

      JsonObject requeued = second.awaitFinished(running, WAIT);
      assertEquals("BENCHMARKED", requeued.getString("status"));
      assertEquals(1, requeued.getInteger("restart_count"));
      try (SseClient all = second.events(running, token, Map.of())) {
        List<Frame> frames = all.untilEnd(WAIT);
        Frame restarted = frames.stream().filter(f -> "restarted".equals(f.data().getString("reason")))
            .findFirst().orElseThrow(() -> new AssertionError("no restart event in " + frames));
        assertEquals("IN_QUEUE", restarted.event());
        for (int i = 0; i < frames.size(); i++) {
          assertEquals(i + 1, frames.get(i).id(), "sequence numbers continue across the restart");
        }
      }
      assertEquals("BENCHMARKED", second.awaitFinished(queued, WAIT).getString("status"));
      JsonObject failed = second.awaitFinished(twice, WAIT);
      assertEquals("ERROR", failed.getString("status"));
      assertTrue(failed.getJsonObject("error").getString("message").contains("restarted twice"));
    }
  }
}
