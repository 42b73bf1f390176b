package dev.kernelrunner.http;

import dev.kernelrunner.config.AppConfig;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.vertx.core.Vertx;
import io.vertx.core.http.HttpConnection;
import io.vertx.core.http.HttpServerRequest;
import java.util.HashMap;
import java.util.Map;

/**
 * Connection hygiene the HTTP server does not do by itself: a cap on connections, overall and per client
 * address (a connection past it is closed at once), and deadlines of {@code HTTP_HEADER_TIMEOUT_SECONDS}: for
 * a connection's first request headers (from its opening) and for every request's body (from its headers). A
 * client that trickles them (slowloris) is cut off; a keep-alive connection between requests is the idle
 * timeout's. Used from the HTTP verticle's event loop only.
 */
final class ConnectionGuard {
  private final Vertx vertx;
  private final AppConfig.Http http;
  private final Map<String, Integer> perAddress = new HashMap<>();
  private final Map<HttpConnection, State> connections = new HashMap<>();
  private final Counter refused;
  private final Counter timedOut;

  /** How many requests a connection has begun, and its deadline timer. */
  private static final class State {
    int requests;
    long timer = -1;
  }

  ConnectionGuard(Vertx vertx, AppConfig.Http http, MeterRegistry meters) {
    this.vertx = vertx;
    this.http = http;
    refused = Counter.builder("kernel_runner_http_connections_refused_total")
        .description("connections closed at once: over HTTP_MAX_CONNECTIONS or HTTP_MAX_CONNECTIONS_PER_ADDRESS")
        .register(meters);
    timedOut = Counter.builder("kernel_runner_http_request_timeouts_total")
        .description("connections cut off: a request's headers and body took longer than HTTP_HEADER_TIMEOUT_SECONDS")
        .register(meters);
    Gauge.builder("kernel_runner_http_connections", connections, Map::size)
        .description("open HTTP connections").register(meters);
  }

  void onConnection(HttpConnection connection) {
    String address = connection.remoteAddress() == null ? "?" : connection.remoteAddress().hostAddress();
    int fromAddress = perAddress.getOrDefault(address, 0);
    if (connections.size() >= http.maxConnections() || fromAddress >= http.maxConnectionsPerAddress()) {
      refused.increment();
      connection.close();
      return;
    }
    perAddress.put(address, fromAddress + 1);
    State state = new State();
    connections.put(connection, state);
    connection.closeHandler(v -> {
      State gone = connections.remove(connection);
      if (gone != null) {
        vertx.cancelTimer(gone.timer);
        perAddress.computeIfPresent(address, (a, n) -> n > 1 ? n - 1 : null);
      }
    });
    arm(connection, state);
  }

  /** A request's headers have arrived: its body must follow before the same deadline. */
  void onRequest(HttpServerRequest request) {
    State state = connections.get(request.connection());
    if (state == null) {
      return;
    }
    state.requests++;
    vertx.cancelTimer(state.timer);
    if (request.isEnded()) {
      return;
    }
    state.timer = vertx.setTimer(http.headerTimeout().toMillis(), t -> {
      if (!request.isEnded()) {
        timedOut.increment();
        if (!request.response().headWritten()) {
          request.response().setStatusCode(408).putHeader("Connection", "close")
              .putHeader("Content-Type", "application/json")
              .end("{\"error\":\"request_timeout\",\"message\":\"the request body took longer than "
                  + http.headerTimeout().toSeconds() + " s to arrive\"}");
        }
        request.connection().close();
      }
    });
  }

  /** The first request's headers must arrive in time; later ones are the idle timeout's. */
  private void arm(HttpConnection connection, State state) {
    state.timer = vertx.setTimer(http.headerTimeout().toMillis(), t -> {
      if (state.requests == 0) {
        timedOut.increment();
        connection.close();
      }
    });
  }
}
