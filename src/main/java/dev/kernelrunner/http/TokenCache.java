package dev.kernelrunner.http;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.LongSupplier;

/**
 * Who a token belongs to, remembered for a short while, so that a request does not cost a database round trip
 * for its token (a stream opened right after a submission would cost two). Unknown tokens are remembered too,
 * so that a client guessing or replaying bad tokens costs no query each time. An entry holds only while no token
 * has been revoked since its lookup began ({@code revocations}, this instance's count); {@link #TTL_NANOS} bounds
 * how long a change made elsewhere (another instance's revocation) can go unseen.
 * Used from the HTTP verticle's event loop only.
 */
final class TokenCache {
  static final long TTL_NANOS = 30_000_000_000L;
  private static final int MAX_ENTRIES = 10_000;

  /** What a lookup found: {@code principal} null for a token the database does not know. */
  record Lookup(Principal principal) {}

  private record Entry(Lookup lookup, long expiresAt, long revocations) {}

  private final LongSupplier clock;
  private final LongSupplier revocations;
  private final Map<String, Entry> known = lru();
  // Apart, so that a flood of bad tokens cannot push the good ones out.
  private final Map<String, Entry> unknown = lru();

  TokenCache(LongSupplier clock, LongSupplier revocations) {
    this.clock = clock;
    this.revocations = revocations;
  }

  /** The revocations so far: read it before a lookup and give it to {@link #put} with what the lookup found. */
  long revocations() {
    return revocations.getAsLong();
  }

  /** What {@code token} was found to be less than the TTL ago and with no revocation since, else null. */
  Lookup get(String token) {
    Lookup found = fresh(known, token);
    return found != null ? found : fresh(unknown, token);
  }

  /** Remembers a lookup that began when {@code before} revocations had been made. */
  void put(String token, Principal principal, long before) {
    unknown.remove(token);
    known.put(token, new Entry(new Lookup(principal), clock.getAsLong() + TTL_NANOS, before));
  }

  void putUnknown(String token, long before) {
    unknown.put(token, new Entry(new Lookup(null), clock.getAsLong() + TTL_NANOS, before));
  }

  int size() {
    return known.size() + unknown.size();
  }

  private Lookup fresh(Map<String, Entry> entries, String token) {
    Entry entry = entries.get(token);
    if (entry == null) {
      return null;
    }
    if (clock.getAsLong() - entry.expiresAt() >= 0 || entry.revocations() != revocations.getAsLong()) {
      entries.remove(token);
      return null;
    }
    return entry.lookup();
  }

  private static Map<String, Entry> lru() {
    return new LinkedHashMap<>(256, 0.75f, true) {
      @Override
      protected boolean removeEldestEntry(Map.Entry<String, Entry> eldest) {
        return size() > MAX_ENTRIES;
      }
    };
  }
}
