package dev.kernelrunner.bus;

import io.vertx.core.Vertx;
import io.vertx.core.shareddata.LocalMap;

/**
 * How many token revocations this instance has made, shared in memory between the store, which counts one before
 * it answers a revocation, and the HTTP edge, whose cache of known tokens holds only what it looked up since the
 * last count. A counter read synchronously, unlike a published message, cannot arrive after the next request.
 */
public final class Revocations {
  private static final String MAP = "kernel-runner.tokens";
  private static final String COUNT = "revocations";

  private final LocalMap<String, Long> map;

  public Revocations(Vertx vertx) {
    this.map = vertx.sharedData().getLocalMap(MAP);
  }

  /** Counts a revocation: every token the HTTP edge remembers is looked up again. */
  public void count() {
    map.merge(COUNT, 1L, Long::sum);
  }

  /** The revocations so far. */
  public long seen() {
    return map.getOrDefault(COUNT, 0L);
  }
}
