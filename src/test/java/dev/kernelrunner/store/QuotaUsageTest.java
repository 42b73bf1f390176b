package dev.kernelrunner.store;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.vertx.core.json.JsonObject;
import org.junit.jupiter.api.Test;

class QuotaUsageTest {
  private static final QuotaUsage.Limits LIMITS = new QuotaUsage.Limits(4, 10, 3600);

  @Test
  void underEveryLimitNothingRefuses() {
    QuotaUsage usage = new QuotaUsage(LIMITS, 3, 9, 100.0, 3599.0, 200.0);
    assertNull(usage.refusedBy());
    assertNull(usage.refusal());
    assertEquals(0, usage.retryAfterSeconds());
  }

  @Test
  void theFirstFullQuotaRefusesAndSaysWhenToComeBack() {
    QuotaUsage active = new QuotaUsage(LIMITS, 4, 10, 12.2, 9999.0, 5.0);
    assertEquals("max_active", active.refusedBy());
    assertEquals(10, active.retryAfterSeconds());
    QuotaUsage hourly = new QuotaUsage(LIMITS, 0, 10, 12.2, 9999.0, 5.0);
    assertEquals("submissions_per_hour", hourly.refusedBy());
    assertEquals(13, hourly.retryAfterSeconds(), "when the hour's oldest leaves the window");
    assertTrue(hourly.refusal().contains("10 submissions within the hour (limit 10 an hour)"), hourly.refusal());
    QuotaUsage daily = new QuotaUsage(LIMITS, 0, 1, 3000.0, 3600.4, 86399.5);
    assertEquals("gpu_seconds_per_day", daily.refusedBy());
    assertEquals(86400, daily.retryAfterSeconds());
    assertTrue(daily.refusal().contains("3600 s within the day"), daily.refusal());
    // No window end known (none stored yet): an hour is said.
    assertEquals(3600, new QuotaUsage(LIMITS, 1, 1, 10.0, 4000.0, null).retryAfterSeconds());
  }

  @Test
  void zeroIsNoLimit() {
    QuotaUsage usage = new QuotaUsage(new QuotaUsage.Limits(4, 0, 0), 0, 1_000_000, 1.0, 1e9, 1.0);
    assertNull(usage.refusedBy());
    JsonObject json = usage.toJson();
    assertNull(json.getJsonObject("submissions_per_hour").getValue("limit"));
    assertEquals(1_000_000L, json.getJsonObject("submissions_per_hour").getLong("used"));
  }
}
