package dev.kernelrunner.http;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.LongSupplier;

/**
 * Who a token belongs to, remembered for a short while, so that a request does not cost a database round trip
 * for its token (a stream opened right after a submission would cost two). Only tokens the database knows are
 * kept; an unknown token is looked up every time. Tokens are never revoked today; a revocation would have to
 * clear this cache, and until then {@link #TTL_NANOS} bounds how long a changed role can go unseen.
 * Used from the HTTP verticle's event loop only.
 */
final class TokenCache {
  static final long TTL_NANOS = 30_000_000_000L;
  private static final int MAX_ENTRIES = 10_000;

  private record Entry(Principal principal, long expiresAt) {}

  private final LongSupplier clock;
  private final Map<String, Entry> entries = new LinkedHashMap<>(256, 0.75f, true) {
    @Override
    protected boolean removeEldestEntry(Map.Entry<String, Entry> eldest) {
      return size() > MAX_ENTRIES;
    }
  };

  TokenCache(LongSupplier clock) {
    this.clock = clock;
  }

  /** The principal of {@code token} if it was looked up less than the TTL ago, else null. */
  Principal get(String token) {
    Entry entry = entries.get(token);
    if (entry == null) {
      return null;
    }
    if (clock.getAsLong() - entry.expiresAt() >= 0) {
      entries.remove(token);
      return null;
    }
    return entry.principal();
  }

  void put(String token, Principal principal) {
    entries.put(token, new Entry(principal, clock.getAsLong() + TTL_NANOS));
  }

  int size() {
    return entries.size();
  }
}
