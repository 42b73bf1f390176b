package dev.kernelrunner.http;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

class TokenCacheTest {
  private final AtomicLong now = new AtomicLong(1_000);
  private final AtomicLong revocations = new AtomicLong();
  private final TokenCache cache = new TokenCache(now::get, revocations::get);

  @Test
  void aKnownTokenIsRememberedUntilItsTimeIsUp() {
    Principal alice = new Principal("alice", false);
    assertNull(cache.get("t1"));
    cache.put("t1", alice, cache.revocations());
    now.addAndGet(TokenCache.TTL_NANOS - 1);
    assertEquals(alice, cache.get("t1").principal());
    now.addAndGet(1);
    assertNull(cache.get("t1"), "looked up again once the TTL has passed");
    assertEquals(0, cache.size());
  }

  @Test
  void itHoldsABoundedNumberOfTokens() {
    for (int i = 0; i < 10_050; i++) {
      cache.put("t" + i, new Principal("u" + i, false), 0);
    }
    assertEquals(10_000, cache.size());
    assertNull(cache.get("t0"), "the least recently used went first");
    assertEquals("u10049", cache.get("t10049").principal().userId());
  }

  @Test
  void unknownTokensAreRememberedApartAndARevocationForgetsEverything() {
    Principal alice = new Principal("alice", false);
    cache.put("good", alice, cache.revocations());
    for (int i = 0; i < 20_000; i++) {
      cache.putUnknown("bad" + i, cache.revocations());
    }
    assertEquals(alice, cache.get("good").principal(), "a flood of bad tokens does not push out a good one");
    assertNull(cache.get("bad19999").principal(), "an unknown token is answered without a lookup");
    revocations.incrementAndGet();
    assertNull(cache.get("good"));
    assertNull(cache.get("bad19999"));
  }

  @Test
  void aLookupThatBeganBeforeARevocationIsNotRemembered() {
    long before = cache.revocations();
    revocations.incrementAndGet(); // the token is revoked while its lookup is on the way
    cache.put("t1", new Principal("alice", false), before);
    assertNull(cache.get("t1"), "what the lookup found may be the revoked token's owner: looked up again");
  }
}
