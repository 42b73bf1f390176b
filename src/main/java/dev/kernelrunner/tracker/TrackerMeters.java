package dev.kernelrunner.tracker;

import dev.kernelrunner.model.EventType;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import io.vertx.core.json.JsonObject;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Supplier;

/**
 * The tracker's domain meters, {@code kernel_runner_*}, labelled by bounded sets only (GPU type, status,
 * phase, reason): never a submission or user id.
 */
final class TrackerMeters {
  /** Statuses a submission can be in before it ends: one gauge each per GPU type. */
  static final List<EventType> LIVE_STATUSES = List.of(EventType.IN_QUEUE, EventType.PROVISIONING,
      EventType.COMPILING, EventType.CHECKING, EventType.CHECKED, EventType.BENCHMARKING, EventType.PROFILING);
  private static final Set<String> CANCEL_REASONS = Set.of("owner", "admin", "client_disconnected", "killed");
  private static final Duration[] PHASE_BUCKETS = {Duration.ofMillis(100), Duration.ofMillis(500),
      Duration.ofSeconds(1), Duration.ofSeconds(2), Duration.ofSeconds(5), Duration.ofSeconds(10),
      Duration.ofSeconds(30), Duration.ofMinutes(1), Duration.ofMinutes(2), Duration.ofMinutes(5),
      Duration.ofMinutes(10), Duration.ofMinutes(20), Duration.ofMinutes(40)};

  private final MeterRegistry registry;
  private final Map<String, double[]> device = new HashMap<>();
  private final Map<String, Timer> phaseTimers = new HashMap<>();
  /**
   * Gauges are read by the scrape on another thread: they read these values, which {@link #refresh} computes
   * on the tracker's own event loop from its state.
   */
  private final Map<String, Supplier<Number>> sources = new HashMap<>();
  private final Map<String, Double> values = new java.util.concurrent.ConcurrentHashMap<>();

  TrackerMeters(MeterRegistry registry) {
    this.registry = registry;
  }

  /** Gauges read from the tracker's own state at scrape time. */
  void gauges(String gpuType, Map<EventType, Supplier<Number>> byStatus,
              Map<EventType, Supplier<Number>> oldestInStatus, Supplier<Number> queueLength,
              Supplier<Number> oldestQueuedSeconds, Supplier<Number> running, Supplier<Number> capacity) {
    byStatus.forEach((status, count) -> Gauge.builder("kernel_runner_submissions_current",
            snapshot("current/" + gpuType + "/" + status, count))
        .description("unfinished submissions by status").tag("gpu_type", gpuType).tag("status", status.name())
        .register(registry));
    oldestInStatus.forEach((status, age) -> Gauge.builder("kernel_runner_submissions_oldest_in_status_seconds",
            snapshot("oldest/" + gpuType + "/" + status, age))
        .description("the longest time an unfinished submission has been in its current status")
        .tag("gpu_type", gpuType).tag("status", status.name()).register(registry));
    Gauge.builder("kernel_runner_queue_length", snapshot("queue/" + gpuType, queueLength))
        .description("submissions waiting for a GPU").tag("gpu_type", gpuType).register(registry);
    Gauge.builder("kernel_runner_queue_oldest_age_seconds", snapshot("queue_oldest/" + gpuType, oldestQueuedSeconds))
        .description("how long the oldest queued submission has waited").tag("gpu_type", gpuType)
        .register(registry);
    Gauge.builder("kernel_runner_running", snapshot("running/" + gpuType, running))
        .description("submissions holding a GPU slot").tag("gpu_type", gpuType).register(registry);
    Gauge.builder("kernel_runner_capacity", capacity).description("GPU slots (runs in flight at most)")
        .tag("gpu_type", gpuType).register(registry);
  }

  /** Accepted: validated, stored, IN_QUEUE sent ("_created" is a reserved suffix in OpenMetrics). */
  private Supplier<Number> snapshot(String key, Supplier<Number> source) {
    sources.put(key, source);
    values.put(key, 0.0);
    return () -> values.getOrDefault(key, 0.0);
  }

  /** Recomputes the gauges' values; call on the tracker's event loop. */
  void refresh() {
    sources.forEach((key, source) -> values.put(key, source.get().doubleValue()));
  }

  void created(String gpuType) {
    counter("kernel_runner_submissions_accepted_total", "gpu_type", gpuType).increment();
  }

  void finished(String gpuType, EventType status) {
    counter("kernel_runner_submissions_finished_total", "gpu_type", gpuType, "status", status.name()).increment();
  }

  /** Time spent in {@code phase} (queue_wait, provisioning, compile, check, benchmark, total). */
  void phase(String gpuType, String phase, long nanos) {
    // Looked up once per GPU type and phase: building and registering a timer per call showed in profiles.
    phaseTimers.computeIfAbsent(gpuType + "/" + phase, key -> Timer.builder("kernel_runner_phase_duration")
            .description("time spent in each phase of a submission").tag("gpu_type", gpuType).tag("phase", phase)
            .serviceLevelObjectives(PHASE_BUCKETS).register(registry))
        .record(Math.max(0, nanos), java.util.concurrent.TimeUnit.NANOSECONDS);
  }

  void cancelled(String gpuType, String reason) {
    counter("kernel_runner_cancellations_total", "gpu_type", gpuType, "reason",
        CANCEL_REASONS.contains(reason) ? reason : "other").increment();
  }

  void timedOut(String gpuType) {
    counter("kernel_runner_cancellations_total", "gpu_type", gpuType, "reason", "timeout").increment();
  }

  /** Cost and device readings a terminal event carries. */
  void result(String gpuType, EventType type, JsonObject fields) {
    if (fields.getValue("cost_usd") instanceof Number cost) {
      counter("kernel_runner_cost_usd_total", "gpu_type", gpuType).increment(cost.doubleValue());
    }
    if (type != EventType.BENCHMARKED || !(fields.getValue("device") instanceof JsonObject readings)) {
      return;
    }
    JsonObject end = readings.getJsonObject("end", readings.getJsonObject("start", new JsonObject()));
    double[] latest = device.computeIfAbsent(gpuType, type1 -> {
      double[] values = {Double.NaN, Double.NaN, Double.NaN};
      deviceGauge("kernel_runner_device_sm_clock_mhz", "SM clock at the end of the latest benchmark", type1,
          values, 0);
      deviceGauge("kernel_runner_device_temperature_celsius", "GPU temperature at the end of the latest benchmark",
          type1, values, 1);
      deviceGauge("kernel_runner_device_power_watts", "GPU power at the end of the latest benchmark", type1,
          values, 2);
      return values;
    });
    latest[0] = number(end, "sm_clock_mhz");
    latest[1] = number(end, "temperature_c");
    latest[2] = number(end, "power_w");
  }

  private void deviceGauge(String name, String description, String gpuType, double[] values, int index) {
    Gauge.builder(name, values, v -> v[index]).description(description).tag("gpu_type", gpuType)
        .register(registry);
  }

  private static double number(JsonObject json, String field) {
    return json.getValue(field) instanceof Number n ? n.doubleValue() : Double.NaN;
  }

  private Counter counter(String name, String... tags) {
    return registry.counter(name, tags);
  }
}
