package dev.kernelrunner.http;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;

/** Meters of the SSE streams: events sent, and streams that ended before their submission did (and why). */
final class SseMeters {
  final Counter eventsSent;
  final Counter droppedSlow;
  final Counter droppedClient;
  final Counter droppedError;

  SseMeters(MeterRegistry registry) {
    eventsSent = Counter.builder("kernel_runner_sse_events_sent_total").description("events written to SSE streams")
        .register(registry);
    droppedSlow = dropped(registry, "slow_client");
    droppedClient = dropped(registry, "client_closed");
    droppedError = dropped(registry, "error");
  }

  private static Counter dropped(MeterRegistry registry, String reason) {
    return Counter.builder("kernel_runner_sse_streams_dropped_total")
        .description("streams closed before their submission ended").tag("reason", reason).register(registry);
  }
}
