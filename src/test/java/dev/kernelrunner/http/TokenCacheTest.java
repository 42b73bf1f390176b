package dev.kernelrunner.http;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

class TokenCacheTest {
  private final AtomicLong now = new AtomicLong(1_000);
  private final TokenCache cache = new TokenCache(now::get);

  @Test
  void aKnownTokenIsRememberedUntilItsTimeIsUp() {
    Principal alice = new Principal("alice", false);
    assertNull(cache.get("t1"));
    cache.put("t1", alice);
    now.addAndGet(TokenCache.TTL_NANOS - 1);
    assertEquals(alice, cache.get("t1").principal());
    now.addAndGet(1);
    assertNull(cache.get("t1"), "looked up again once the TTL has passed");
    assertEquals(0, cache.size());
  }

  @Test
  void itHoldsABoundedNumberOfTokens() {
    for (int i = 0; i < 10_050; i++) {
      cache.put("t" + i, new Principal("u" + i, false));
    }
    assertEquals(10_000, cache.size());
    assertNull(cache.get("t0"), "the least recently used went first");
    assertEquals("u10049", cache.get("t10049").principal().userId());
  }

  @Test
  void unknownTokensAreRememberedApartAndARevocationForgetsEverything() {
    long[] now = {0};
    TokenCache cache = new TokenCache(() -> now[0]);
    Principal alice = new Principal("alice", false);
    cache.put("good", alice);
    for (int i = 0; i < 20_000; i++) {
      cache.putUnknown("bad" + i);
    }
    assertEquals(alice, cache.get("good").principal(), "a flood of bad tokens does not push out a good one");
    assertNull(cache.get("bad19999").principal(), "an unknown token is answered without a lookup");
    cache.clear();
    assertNull(cache.get("good"));
    assertNull(cache.get("bad19999"));
  }
}
