package dev.kernelrunner.flow;

import static dev.kernelrunner.support.SseClient.types;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.kernelrunner.support.SseClient;
import dev.kernelrunner.support.SseClient.Frame;
import dev.kernelrunner.support.TestService;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonObject;
import io.vertx.junit5.VertxExtension;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Profile mode through the service: the agent's per-test profiles are events like any other, its report file
 * arrives in signed pieces that are kept beside the submission (never stored or streamed as events), and only the
 * owner or an admin can download it; a report that does not add up is not kept, and the result says why.
 */
@ExtendWith(VertxExtension.class)
class ProfileModeTest {
  private static TestService service;
  private static String owner;
  private static String stranger;

  @BeforeAll
  static void start(Vertx vertx) throws Exception {
    service = TestService.start(vertx, Map.of("LOCAL_MAX_CONCURRENT", "2"));
    owner = service.userToken("profiler");
    stranger = service.userToken("someone-else");
  }

  @AfterAll
  static void stop() throws Exception {
    service.close();
  }

  @Test
  void aProfileStreamsPerTestResultsAndItsReportIsDownloadableByItsOwnerOnly() throws Exception {
    String id = service.submit(owner, "// agent: ok", "profile");
    List<Frame> frames;
    try (SseClient stream = service.events(id, owner, Map.of())) {
      frames = stream.untilEnd(Duration.ofSeconds(30));
    }
    assertEquals(List.of("IN_QUEUE", "PROVISIONING", "COMPILING", "CHECKING", "TEST_RESULT", "TEST_RESULT", "CHECKED",
        "PROFILING", "PROFILE_RESULT", "PROFILE_RESULT", "PROFILED"), types(frames));
    JsonObject report = frames.get(frames.size() - 1).data().getJsonObject("report");
    assertEquals(true, report.getBoolean("stored"), report.encode());

    JsonObject stored = service.awaitFinished(id, Duration.ofSeconds(30));
    assertEquals("PROFILED", stored.getString("status"));
    assertEquals(2, stored.getJsonArray("profile_results").size());
    assertEquals(0.01, stored.getJsonArray("profile_results").getJsonObject(0).getJsonArray("kernels")
        .getJsonObject(0).getDouble("duration_ms"));
    assertTrue(stored.getJsonObject("result").getJsonObject("report").getBoolean("stored"));

    TestService.Download download = service.download("/api/submissions/" + id + "/profile", owner);
    assertEquals(200, download.status());
    assertEquals(384_000, download.body().length);
    assertEquals(report.getString("sha256"), sha256(download.body()));
    assertEquals(List.of("attachment; filename=\"" + id + "-profile.ncu-rep\""),
        download.headers().get("content-disposition"));
    assertEquals(200, service.download("/api/submissions/" + id + "/profile", TestService.ADMIN_TOKEN).status());
    TestService.Download foreign = service.download("/api/submissions/" + id + "/profile", stranger);
    assertEquals(404, foreign.status());
    assertFalse(new String(foreign.body()).contains(report.getString("sha256")));
    assertEquals(401, service.download("/api/submissions/" + id + "/profile", null).status());

    // The pieces are no events: neither replayed nor stored.
    String all = service.get("/api/submissions/" + id, owner).body();
    assertFalse(all.contains("PROFILE_REPORT"));
    try (SseClient replay = service.events(id, owner, Map.of())) {
      assertEquals(types(frames), types(replay.untilEnd(Duration.ofSeconds(30))));
    }
  }

  @ParameterizedTest
  @ValueSource(strings = {"corrupt", "missing-piece"})
  void aReportThatDoesNotAddUpIsNotKeptAndTheResultSaysWhy(String fault) throws Exception {
    String id = service.submit(owner, "// agent: ok\n// report: " + fault, "profile");
    JsonObject stored = service.awaitFinished(id, Duration.ofSeconds(30));
    assertEquals("PROFILED", stored.getString("status"));
    JsonObject report = stored.getJsonObject("result").getJsonObject("report");
    assertEquals(false, report.getBoolean("stored"));
    assertTrue(report.getString("problem").contains(fault.equals("corrupt") ? "SHA-256" : "missing"),
        report.encode());
    TestService.Response missing = service.get("/api/submissions/" + id + "/profile", owner);
    assertEquals(404, missing.status());
    assertTrue(missing.json().getString("message").contains("no profile"), missing.body());
  }

  @Test
  void aCheckedOrBenchmarkedSubmissionHasNoProfileAndBadModesAreNamed() throws Exception {
    String id = service.submit(owner, "// agent: ok", "check");
    service.awaitFinished(id, Duration.ofSeconds(30));
    assertEquals(404, service.get("/api/submissions/" + id + "/profile", owner).status());
    TestService.Response bad = service.post("/api/submissions", owner,
        TestService.submission("// agent: ok", "trace").encode());
    assertEquals(400, bad.status());
    assertTrue(bad.body().contains("'profile'"), bad.body());
  }

  private static String sha256(byte[] bytes) throws Exception {
    return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(bytes));
  }
}
