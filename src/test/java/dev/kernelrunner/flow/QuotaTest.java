package dev.kernelrunner.flow;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.kernelrunner.support.TestService;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonObject;
import io.vertx.junit5.VertxExtension;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** Quotas per user over rolling windows: submissions an hour, GPU-seconds a day; 429 with Retry-After, /api/me. */
@ExtendWith(VertxExtension.class)
class QuotaTest {
  private static final Duration WAIT = Duration.ofSeconds(30);
  private static TestService service;

  @BeforeAll
  static void start(Vertx vertx) throws Exception {
    service = TestService.start(vertx, Map.of("LOCAL_MAX_CONCURRENT", "4", "MAX_ACTIVE_PER_USER", "10",
        "QUOTA_SUBMISSIONS_PER_HOUR", "3", "QUOTA_GPU_SECONDS_PER_DAY", "2"));
  }

  @AfterAll
  static void stop() throws Exception {
    service.close();
  }

  private static TestService.Response create(String token) throws Exception {
    return service.post("/api/submissions", token, TestService.submission("// agent: ok", "benchmark").encode());
  }

  @Test
  void anHoursSubmissionsAreCountedAndTheNextWaitsForTheOldestToAgeOut() throws Exception {
    String token = service.userToken("hourly");
    for (int i = 0; i < 3; i++) {
      TestService.Response created = create(token);
      assertEquals(201, created.status(), created.body());
      service.awaitFinished(created.json().getString("id"), WAIT);
    }
    TestService.Response refused = create(token);
    assertEquals(429, refused.status(), refused.body());
    JsonObject body = refused.json();
    assertEquals("quota", body.getString("error"));
    assertEquals("submissions_per_hour", body.getString("quota"));
    assertTrue(body.getString("message").contains("3 submissions within the hour (limit 3 an hour)"), body.encode());
    long retryAfter = Long.parseLong(refused.headers().get("retry-after").get(0));
    assertTrue(retryAfter > 3500 && retryAfter <= 3600, "the oldest leaves the hour in about an hour: " + retryAfter);
    JsonObject quotas = service.get("/api/me", token).json().getJsonObject("quotas");
    assertEquals(new JsonObject().put("limit", 3).put("used", 3), quotas.getJsonObject("submissions_per_hour"));
    assertEquals(0, quotas.getJsonObject("max_active").getInteger("used"));
    // Another user is not held back by this one's quota.
    assertEquals(201, create(service.userToken("other")).status());
  }

  @Test
  void gpuSecondsOfADayAreCountedFromTheRunsStartToItsEnd() throws Exception {
    String token = service.userToken("heavy");
    TestService.Response long_ = service.post("/api/submissions", token,
        TestService.submission("// agent: ok\n// delay: 0.3", "benchmark").encode());
    assertEquals(201, long_.status(), long_.body());
    service.awaitFinished(long_.json().getString("id"), WAIT);  // about 3 s on the GPU: past the 2 s a day
    TestService.Response refused = create(token);
    assertEquals(429, refused.status(), refused.body());
    assertEquals("gpu_seconds_per_day", refused.json().getString("quota"));
    long retryAfter = Long.parseLong(refused.headers().get("retry-after").get(0));
    assertTrue(retryAfter > 86000 && retryAfter <= 86400, "when that run leaves the day: " + retryAfter);
    double used = service.get("/api/me", token).json().getJsonObject("quotas").getJsonObject("gpu_seconds_per_day")
        .getDouble("used");
    assertTrue(used >= 2 && used < 30, "GPU-seconds used: " + used);
  }
}
