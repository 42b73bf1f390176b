package dev.kernelrunner.flow;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.kernelrunner.support.SseClient;
import dev.kernelrunner.support.TestService;
import dev.kernelrunner.support.TestService.Response;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.junit5.VertxExtension;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** What an attacker with a socket (or curl) tries, and what a careless client does, against a real server. */
@ExtendWith(VertxExtension.class)
class HttpHygieneTest {
  private static final Duration WAIT = Duration.ofSeconds(30);
  private static TestService service;

  @BeforeAll
  static void start(Vertx vertx) throws Exception {
    service = TestService.start(vertx, Map.of("HTTP_HEADER_TIMEOUT_SECONDS", "2", "HTTP_MAX_CONNECTIONS", "400",
        "HTTP_MAX_CONNECTIONS_PER_ADDRESS", "150", "SSE_MAX_STREAMS_PER_USER", "2", "MAX_ACTIVE_PER_USER", "100",
        "LOCAL_MAX_CONCURRENT", "4"));
  }

  @AfterAll
  static void stop() throws Exception {
    service.close();
  }

  private static Socket connect() throws IOException {
    Socket socket = new Socket("127.0.0.1", service.port());
    socket.setSoTimeout(10_000);
    return socket;
  }

  /** Reads until the server closes (true) or {@code timeout} passes with the socket still open (false). */
  private static boolean closedWithin(Socket socket, Duration timeout) throws IOException {
    socket.setSoTimeout((int) timeout.toMillis());
    InputStream in = socket.getInputStream();
    byte[] buffer = new byte[8192];
    try {
      while (in.read(buffer) >= 0) {
        // what it sent before closing
      }
      return true;
    } catch (SocketTimeoutException e) {
      return false;
    } catch (IOException reset) {
      return true;
    }
  }

  @Test
  void aClientTricklingItsHeadersIsCutOff() throws Exception {
    try (Socket socket = connect()) {
      OutputStream out = socket.getOutputStream();
      out.write("GET /health/live HTTP/1.1\r\nHost: x\r\n".getBytes(StandardCharsets.US_ASCII));
      long started = System.nanoTime();
      boolean closed = false;
      for (int i = 0; i < 8 && !closed; i++) {
        try {
          out.write("X-Slow: a\r\n".getBytes(StandardCharsets.US_ASCII)); // one header a second: never idle
          out.flush();
        } catch (IOException e) {
          closed = true;
          break;
        }
        closed = closedWithin(socket, Duration.ofSeconds(1));
      }
      assertTrue(closed, "a slowloris client is cut off");
      assertTrue(System.nanoTime() - started < Duration.ofSeconds(6).toNanos());
    }
  }

  @Test
  void aBodyThatNeverArrivesGets408() throws Exception {
    try (Socket socket = connect()) {
      socket.getOutputStream().write(("POST /api/submissions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "
          + TestService.ADMIN_TOKEN + "\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"pro")
          .getBytes(StandardCharsets.US_ASCII));
      String answer = new String(socket.getInputStream().readAllBytes(), StandardCharsets.US_ASCII);
      assertTrue(answer.startsWith("HTTP/1.1 408"), answer);
    }
  }

  @Test
  void anAbortedUploadIsNoErrorOfOurs() throws Exception {
    ch.qos.logback.classic.Logger root = (ch.qos.logback.classic.Logger) org.slf4j.LoggerFactory
        .getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME);
    ch.qos.logback.core.read.ListAppender<ch.qos.logback.classic.spi.ILoggingEvent> seen =
        new ch.qos.logback.core.read.ListAppender<>();
    seen.start();
    root.addAppender(seen);
    try {
      for (int i = 0; i < 3; i++) {
        try (Socket socket = connect()) {
          socket.getOutputStream().write(("POST /api/submissions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "
              + TestService.ADMIN_TOKEN + "\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n"
              + "{\"code\": \"" + "x".repeat(20000)).getBytes(StandardCharsets.US_ASCII));
          socket.getOutputStream().flush();
          Thread.sleep(200);
          socket.setSoLinger(true, 0); // an abort: RST, as a browser tab closed mid-upload
        }
      }
      Thread.sleep(500);
      assertTrue(seen.list.stream().noneMatch(e -> e.getLevel().isGreaterOrEqual(ch.qos.logback.classic.Level.ERROR)),
          "no ERROR for a client that left: " + seen.list.stream().map(e -> e.getLoggerName() + " " + e.getFormattedMessage() + " " + (e.getThrowableProxy() == null ? "" : e.getThrowableProxy().getClassName() + ": " + e.getThrowableProxy().getMessage() + " at " + java.util.Arrays.toString(java.util.Arrays.copyOf(e.getThrowableProxy().getStackTraceElementProxyArray(), 6)))).toList());
      assertEquals(200, service.get("/health/live", null).status());
    } finally {
      root.detachAppender(seen);
    }
  }

  @Test
  void anUnauthenticatedBodyIsRefusedBeforeItIsRead() throws Exception {
    try (Socket socket = connect()) {
      // 50 MB announced, none sent: the answer cannot wait for it.
      socket.getOutputStream().write(("POST /api/submissions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer kr_nobody"
          + "\r\nContent-Type: application/json\r\nContent-Length: 50000000\r\n\r\n")
          .getBytes(StandardCharsets.US_ASCII));
      socket.setSoTimeout(1500);
      byte[] head = new byte[12];
      assertEquals(12, socket.getInputStream().readNBytes(head, 0, 12));
      assertEquals("HTTP/1.1 401", new String(head, StandardCharsets.US_ASCII));
    }
  }

  @Test
  void manyIdleSocketsNeitherExhaustTheServiceNorOutliveTheDeadline() throws Exception {
    List<Socket> idle = new ArrayList<>();
    try {
      for (int i = 0; i < 300; i++) {
        idle.add(connect());
      }
      // Past the per-address cap, connections are closed at once.
      assertTrue(closedWithin(idle.get(299), Duration.ofSeconds(1)), "over the cap: closed at once");
      assertFalse(closedWithin(idle.get(0), Duration.ofMillis(200)), "under the cap: open until the deadline");
      Thread.sleep(2500);
      for (Socket socket : idle.subList(0, 150)) {
        assertTrue(closedWithin(socket, Duration.ofSeconds(2)), "no request within the deadline: closed");
      }
      assertEquals(200, service.get("/health/live", null).status());
    } finally {
      for (Socket socket : idle) {
        socket.close();
      }
    }
  }

  @Test
  void streamsPerUserAreCappedAndAFinishedStreamEndsPastItsLastEvent() throws Exception {
    String token = service.userToken("hana");
    String running = service.submit(token, "// agent: hang");
    try (SseClient one = service.events(running, token, Map.of());
         SseClient two = service.events(running, token, Map.of())) {
      assertEquals(200, one.status());
      assertEquals(200, two.status());
      try (SseClient three = service.events(running, token, Map.of())) {
        assertEquals(429, three.status());
        assertEquals("10", three.header("Retry-After"));
        assertEquals("too_many_streams", three.errorJson().getString("error"));
      }
      two.close();
      Thread.sleep(300);
      try (SseClient again = service.events(running, token, Map.of())) {
        assertEquals(200, again.status(), "a closed stream frees its place");
      }
    } finally {
      service.post("/api/submissions/" + running + "/cancel", token, "");
    }
    String done = service.submit(token, "// agent: ok");
    service.awaitFinished(done, WAIT);
    try (SseClient past = service.events(done, token, Map.of("Last-Event-ID", "999"))) {
      assertEquals(204, past.status(), "nothing after 999, and the submission has ended: the standard's 'stop'");
    }
    // Past the end of one still running: the stream ends when the submission does, not at the idle timeout.
    String later = service.submit(token, "// agent: ok\n// delay: 0.3");
    try (SseClient ahead = service.events(later, token, Map.of("Last-Event-ID", "999"))) {
      assertEquals(200, ahead.status());
      assertTrue(ahead.untilEnd(WAIT).isEmpty(), "no event after 999");
      assertTrue(ahead.ended(), "it ended with the submission");
    }
  }

  @Test
  void aClientThatClosesItsPageIsCountedAsSuchNotAsAnError() throws Exception {
    String token = service.userToken("ivan");
    String running = service.submit(token, "// agent: hang");
    double closedBefore = service.metricSum("kernel_runner_sse_streams_dropped_total{reason=\"client_closed\"");
    double errorsBefore = service.metricSum("kernel_runner_sse_streams_dropped_total{reason=\"error\"");
    for (int i = 0; i < 2; i++) {
      try (SseClient stream = service.events(running, token, Map.of())) {
        stream.nextOf("PROVISIONING", WAIT);
      }
    }
    Thread.sleep(500);
    assertEquals(closedBefore + 2, service.metricSum("kernel_runner_sse_streams_dropped_total{reason=\"client_closed\""));
    assertEquals(errorsBefore, service.metricSum("kernel_runner_sse_streams_dropped_total{reason=\"error\""));
    service.post("/api/submissions/" + running + "/cancel", token, "");
  }

  @Test
  void pagingEveryonesSubmissionsUnderBatchedCreatesMissesNone() throws Exception {
    List<String> tokens = new ArrayList<>();
    for (int u = 0; u < 8; u++) {
      tokens.add(service.userToken("pager" + u));
    }
    ExecutorService pool = Executors.newFixedThreadPool(16);
    List<Future<String>> created = new ArrayList<>();
    try {
      for (int i = 0; i < 64; i++) {
        String token = tokens.get(i % tokens.size());
        created.add(pool.submit(() -> service.submit(token, "// agent: ok", "check")));
      }
      Set<String> ids = new HashSet<>();
      for (Future<String> id : created) {
        ids.add(id.get());
      }
      Set<String> paged = new HashSet<>();
      int pages = 0;
      String before = null;
      do {
        JsonObject page = service.get("/api/submissions?limit=7" + (before == null ? "" : "&before=" + before),
            TestService.ADMIN_TOKEN).json();
        page.getJsonArray("submissions").forEach(s -> assertTrue(paged.add(((JsonObject) s).getString("id")),
            "no row twice"));
        before = page.getString("next_before");
        pages++;
      } while (before != null && pages < 100);
      assertTrue(paged.containsAll(ids), "every created submission is on some page: missing "
          + ids.stream().filter(id -> !paged.contains(id)).count());
    } finally {
      pool.shutdownNow();
    }
  }

  @Test
  void headCacheHeadersAndTypeErrors() throws Exception {
    HttpClient http = HttpClient.newHttpClient();
    for (String path : List.of("/health/live", "/", "/app.js")) {
      HttpResponse<String> head = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + service.port()
          + path)).method("HEAD", HttpRequest.BodyPublishers.noBody()).build(), HttpResponse.BodyHandlers.ofString());
      assertEquals(200, head.statusCode(), path);
      assertEquals("", head.body());
    }
    for (String file : List.of("/", "/app.js")) {
      String cache = service.get(file, null).headers().get("cache-control").get(0);
      assertEquals("no-cache", cache, file + " is checked again by the browser, never kept as immutable");
    }
    Response token = service.post("/api/admin/tokens", TestService.ADMIN_TOKEN, "{\"user_id\": \"jo\"}");
    assertEquals("no-store", token.headers().get("cache-control").get(0));
    Response typed = service.post("/api/submissions", TestService.ADMIN_TOKEN, new JsonObject().put("problem", 1)
        .put("language", "cuda").put("gpu_type", "local").put("code", "x").encode());
    assertEquals(400, typed.status());
    JsonObject detail = typed.json().getJsonArray("details").getJsonObject(0);
    assertEquals("problem", detail.getString("field"));
    assertEquals("must be a string, not a number", detail.getString("message"));
  }

  @Test
  void tokensAreListedAndRevokedAndARevokedTokenIsRefusedAtOnce() throws Exception {
    String token = service.userToken("kim");
    assertEquals(200, service.get("/api/me", token).status());
    JsonArray listed = service.get("/api/admin/tokens", TestService.ADMIN_TOKEN).json().getJsonArray("tokens");
    JsonObject kim = listed.stream().map(JsonObject.class::cast).filter(t -> "kim".equals(t.getString("user_id")))
        .findFirst().orElseThrow();
    assertNull(kim.getString("revoked_at"));
    assertFalse(listed.encode().contains(token), "a token is never shown again");
    assertEquals(403, service.get("/api/admin/tokens", token).status());
    String id = kim.getString("id");
    assertEquals(204, delete("/api/admin/tokens/" + id).statusCode());
    assertEquals(401, service.get("/api/me", token).status(), "refused at once, cache or not");
    // Revoked by the service itself (as it does its workers' tokens): refused at once too.
    String other = service.userToken("lee");
    assertEquals(200, service.get("/api/me", other).status());
    String otherId = service.get("/api/admin/tokens", TestService.ADMIN_TOKEN).json().getJsonArray("tokens").stream()
        .map(JsonObject.class::cast).filter(t -> "lee".equals(t.getString("user_id"))).findFirst().orElseThrow()
        .getString("id");
    service.vertx().eventBus().request(dev.kernelrunner.bus.Addresses.STORE_TOKEN_REVOKE,
        new JsonObject().put("id", otherId)).toCompletionStage().toCompletableFuture().get(10,
        java.util.concurrent.TimeUnit.SECONDS);
    assertEquals(401, service.get("/api/me", other).status(), "the service's own revocation, cache or not");
    assertEquals(404, delete("/api/admin/tokens/" + id).statusCode());
    assertEquals(400, delete("/api/admin/tokens/not-an-id").statusCode());
    JsonObject again = service.get("/api/admin/tokens", TestService.ADMIN_TOKEN).json().getJsonArray("tokens")
        .stream().map(JsonObject.class::cast).filter(t -> id.equals(t.getString("id"))).findFirst().orElseThrow();
    assertNotNull(again.getString("revoked_at"));
  }

  @Test
  void aGpuTypeServedByAnUnusableDstackIsNotAvailable() throws Exception {
    JsonArray types = service.get("/api/gpu-types", TestService.ADMIN_TOKEN).json().getJsonArray("gpu_types");
    JsonObject mi300x = types.stream().map(JsonObject.class::cast).filter(t -> "MI300X".equals(t.getString("name")))
        .findFirst().orElseThrow();
    assertFalse(mi300x.getBoolean("available"), mi300x.encode());
    assertFalse(mi300x.getBoolean("accepting"), mi300x.encode());
    assertTrue(mi300x.getString("unavailable_reason").startsWith("dstack is"), mi300x.encode());
    // Refused at once (not accepted to end in ERROR later), naming the type and why.
    TestService.Response refused = service.post("/api/submissions", service.userToken("ola"),
        TestService.submission("// agent: ok", "benchmark").put("gpu_type", "MI300X").encode());
    assertEquals(503, refused.status(), refused.body());
    assertEquals("gpu_type_unavailable", refused.json().getString("error"));
    JsonObject detail = refused.json().getJsonArray("details").getJsonObject(0);
    assertEquals("gpu_type", detail.getString("field"));
    assertTrue(detail.getString("message").startsWith("MI300X cannot run now: dstack is"), detail.encode());
    assertEquals(0, service.get("/api/submissions", service.userToken("ola")).json().getJsonArray("submissions")
        .size(), "nothing was created");
    JsonObject local = types.stream().map(JsonObject.class::cast).filter(t -> "local".equals(t.getString("name")))
        .findFirst().orElseThrow();
    assertNull(local.getString("unavailable_reason"));
  }

  private static HttpResponse<String> delete(String path) throws Exception {
    return HttpClient.newHttpClient().send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + service.port()
        + path)).header("Authorization", "Bearer " + TestService.ADMIN_TOKEN).DELETE().build(),
        HttpResponse.BodyHandlers.ofString());
  }
}
