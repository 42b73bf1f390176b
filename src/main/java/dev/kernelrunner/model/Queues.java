package dev.kernelrunner.model;

import java.util.Map;

/**
 * The tracker's GPU queues on the bus (typed, registered with the LocalCodec): what the HTTP edge and the worker-run
 * planner ask of them, and what the worker hub and the local workers tell the tracker about a type's capacity.
 *
 * @param byType each served GPU type's queue by name
 */
public record Queues(Map<String, Queue> byType) {
  public Queues {
    byType = Map.copyOf(byType);
  }

  /** One GPU type's: its backend, how many may run at once, how many run, how many wait. */
  public record Queue(String backend, int capacity, int running, int queued) {}

  /** The question; answered with {@link Queues}. */
  public record Asked() {}

  /** A worker type's capacity is now {@code capacity} (its connected workers'); answered {@code true}. */
  public record Capacity(String gpuType, int capacity) {}

  /**
   * The type cannot run anything now (its local worker does not start): its waiting submissions end as ERROR with
   * {@code message}; answered how many ended.
   */
  public record FailQueued(String gpuType, String message) {}

  /** {@code gpuType}'s queue, or an empty one when the tracker does not serve it. */
  public Queue of(String gpuType) {
    return byType.getOrDefault(gpuType, new Queue(null, 0, 0, 0));
  }
}
