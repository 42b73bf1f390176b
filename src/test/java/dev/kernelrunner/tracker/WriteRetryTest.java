package dev.kernelrunner.tracker;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.kernelrunner.bus.Failures;
import dev.kernelrunner.tracker.WriteRetry.Decision;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class WriteRetryTest {
  private static final long SECOND = 1_000_000_000L;

  @Test
  void unavailableIsRetriedWithADoublingPauseUntilTheBudgetIsSpent() {
    WriteRetry retry = new WriteRetry(Duration.ofSeconds(10), 100);
    List<Long> pauses = new ArrayList<>();
    for (int i = 0; i < 8; i++) {
      assertEquals(Decision.RETRY, retry.onFailure(Failures.UNAVAILABLE, i * SECOND, 5));
      pauses.add(retry.pauseMillis());
    }
    assertEquals(List.of(100L, 200L, 400L, 800L, 1600L, 3200L, 5000L, 5000L), pauses);
    assertEquals(Decision.GIVE_UP, retry.onFailure(Failures.UNAVAILABLE, 10 * SECOND, 5));
    assertEquals(Decision.GIVE_UP, retry.onFailure(Failures.UNAVAILABLE, 11 * SECOND, 5), "and goes on retrying");
  }

  @Test
  void tooManyHeldEventsGiveUpEarly() {
    WriteRetry retry = new WriteRetry(Duration.ofSeconds(10), 100);
    assertEquals(Decision.RETRY, retry.onFailure(Failures.UNAVAILABLE, 0, 100));
    assertEquals(Decision.GIVE_UP, retry.onFailure(Failures.UNAVAILABLE, SECOND, 101));
  }

  @Test
  void aSuccessStartsTheBudgetAgain() {
    WriteRetry retry = new WriteRetry(Duration.ofSeconds(10), 100);
    retry.onFailure(Failures.UNAVAILABLE, 0, 1);
    retry.onSuccess();
    assertEquals(Decision.RETRY, retry.onFailure(Failures.UNAVAILABLE, 60 * SECOND, 1));
    assertEquals(100L, retry.pauseMillis());
  }

  @Test
  void whatTheStoreRefusesForGoodIsDropped() {
    WriteRetry retry = new WriteRetry(Duration.ofSeconds(10), 100);
    assertEquals(Decision.DROP, retry.onFailure(Failures.INTERNAL, 0, 1));
    assertEquals(Decision.DROP, retry.onFailure(Failures.CONFLICT, 0, 1));
  }
}
