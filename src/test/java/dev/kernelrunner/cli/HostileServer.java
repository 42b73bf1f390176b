package dev.kernelrunner.cli;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

/**
 * A real HTTP server (the JDK's) that answers the terminal client as the test says: escape sequences, stalls,
 * malformed events, endless bodies. A route not given answers 404 as the service would.
 */
final class HostileServer implements AutoCloseable {
  /** What one route does with a request; it may write slowly, stall, or never end. */
  interface Route {
    void answer(HttpExchange exchange) throws IOException, InterruptedException;
  }

  /** Every request, as {@code GET /path?query} and, when sent, {@code Last-Event-ID: n}. */
  final List<String> requests = new CopyOnWriteArrayList<>();
  private final Map<String, Route> routes = new ConcurrentHashMap<>();
  private final ExecutorService threads = Executors.newCachedThreadPool(task -> {
    Thread thread = new Thread(task, "hostile-server");
    thread.setDaemon(true);
    return thread;
  });
  private final HttpServer server;

  HostileServer() throws IOException {
    server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 50);
    server.setExecutor(threads);
    server.createContext("/", this::handle);
    server.start();
  }

  /** {@code route("GET /api/problems", ...)}. */
  HostileServer route(String methodAndPath, Route route) {
    routes.put(methodAndPath, route);
    return this;
  }

  String url() {
    return "http://127.0.0.1:" + server.getAddress().getPort();
  }

  private void handle(HttpExchange exchange) {
    String key = exchange.getRequestMethod() + " " + exchange.getRequestURI().getPath();
    String query = exchange.getRequestURI().getRawQuery();
    String lastEventId = exchange.getRequestHeaders().getFirst("Last-Event-ID");
    requests.add(key + (query == null ? "" : "?" + query) + (lastEventId == null ? "" : " Last-Event-ID: "
        + lastEventId));
    try {
      Route route = routes.get(key);
      if (route == null) {
        json(exchange, 404, "{\"error\": \"not_found\", \"message\": \"no such resource\"}");
      } else {
        route.answer(exchange);
      }
    } catch (IOException | InterruptedException e) {
      // the client hung up, or the test is over
    } finally {
      exchange.close();
    }
  }

  static void json(HttpExchange exchange, int status, String body) throws IOException {
    byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
    exchange.getResponseHeaders().set("Content-Type", "application/json");
    exchange.sendResponseHeaders(status, bytes.length);
    try (OutputStream out = exchange.getResponseBody()) {
      out.write(bytes);
    }
  }

  /** Starts an event stream (chunked, no length); the caller writes its frames and flushes. */
  static OutputStream sse(HttpExchange exchange) throws IOException {
    exchange.getResponseHeaders().set("Content-Type", "text/event-stream");
    exchange.sendResponseHeaders(200, 0);
    return exchange.getResponseBody();
  }

  /** One SSE frame, as the service writes them. */
  static String frame(Object id, String type, String data) {
    return "id: " + id + "\nevent: " + type + "\ndata: " + data + "\n\n";
  }

  static void write(OutputStream out, String text) throws IOException {
    out.write(text.getBytes(StandardCharsets.UTF_8));
    out.flush();
  }

  /**
   * Writes {@code head}, then {@code filler} again and again up to {@code total} bytes from one small buffer (never
   * the whole body in memory); returns how much it wrote before the client hung up.
   */
  static long endless(OutputStream out, String head, String filler, long total) {
    byte[] chunk = filler.repeat(Math.max(1, 64 * 1024 / filler.length())).getBytes(StandardCharsets.UTF_8);
    long sent = 0;
    try {
      out.write(head.getBytes(StandardCharsets.UTF_8));
      sent += head.length();
      while (sent < total) {
        int n = (int) Math.min(chunk.length, total - sent);
        out.write(chunk, 0, n);
        sent += n;
      }
      out.flush();
    } catch (IOException e) {
      // the client hung up: what it should do
    }
    return sent;
  }

  /** Holds the exchange open without a byte more: a stalled stream (ends when the server closes). */
  static void stall() throws InterruptedException {
    Thread.sleep(120_000);
  }

  @Override
  public void close() {
    server.stop(0);
    threads.shutdownNow();
  }
}
