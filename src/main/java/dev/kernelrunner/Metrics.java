package dev.kernelrunner;

import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.vertx.core.Vertx;
import io.vertx.core.VertxOptions;
import io.vertx.micrometer.Label;
import io.vertx.micrometer.MicrometerMetricsFactory;
import io.vertx.micrometer.MicrometerMetricsOptions;
import java.util.EnumSet;

/**
 * The one meter registry of the service, and a Vert.x instance that reports its own meters (HTTP server,
 * event bus, SQL pool, worker pools) and the JVM's into it. Labels are kept to bounded sets: the matched route
 * rather than the path, and no event-bus address (each submission has its own events address).
 */
public final class Metrics {
  private Metrics() {}

  public static PrometheusMeterRegistry registry() {
    return new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
  }

  public static Vertx vertx(PrometheusMeterRegistry registry) {
    return vertx(registry, VertxOptions.DEFAULT_EVENT_LOOP_POOL_SIZE);
  }

  /** As above, with {@code eventLoops} event-loop threads (see {@link dev.kernelrunner.config.AppConfig.Runtime}). */
  public static Vertx vertx(PrometheusMeterRegistry registry, int eventLoops) {
    MicrometerMetricsOptions metrics = new MicrometerMetricsOptions()
        .setEnabled(true)
        .setJvmMetricsEnabled(true)
        .setLabels(EnumSet.of(Label.HTTP_ROUTE, Label.HTTP_METHOD, Label.HTTP_CODE, Label.POOL_TYPE,
            Label.POOL_NAME, Label.EB_SIDE, Label.EB_FAILURE, Label.NAMESPACE));
    return Vertx.builder()
        .with(new VertxOptions().setMetricsOptions(metrics)
            .setEventLoopPoolSize(eventLoops))
        .withMetrics(new MicrometerMetricsFactory(registry))
        .build();
  }
}
