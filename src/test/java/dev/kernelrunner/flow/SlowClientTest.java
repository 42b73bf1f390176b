package dev.kernelrunner.flow;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.kernelrunner.support.SseClient;
import dev.kernelrunner.support.SseClient.Frame;
import dev.kernelrunner.support.TestService;
import io.vertx.core.Vertx;
import io.vertx.junit5.VertxExtension;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * A stream whose client stops reading is cut off once its unsent bytes pass the limit, while another stream
 * of the same submission gets every event; the cut-off client resumes with Last-Event-ID and misses nothing.
 */
@ExtendWith(VertxExtension.class)
class SlowClientTest {
  private static final int EVENTS = 1500;
  private static TestService service;

  @BeforeAll
  static void start(Vertx vertx) throws Exception {
    service = TestService.start(vertx, Map.of("SSE_MAX_PENDING_BYTES", "65536"));
  }

  @AfterAll
  static void stop() throws Exception {
    service.close();
  }

  @Test
  void aClientThatCannotKeepUpIsDisconnectedAndResumesWithoutLoss() throws Exception {
    String token = service.userToken("sloane");
    // About 3 MB of events in about two seconds: more than a client that reads nothing can hold, little for one
    // that reads (even on a busy CI machine).
    String id = service.submit(token, "// agent: flood\n// events: " + EVENTS + "\n// size: 2000\n// pause: 0.001");
    try (Socket slow = new Socket()) {
      slow.setReceiveBufferSize(4096);
      slow.setSoTimeout(10_000); // a stream that was never cut off would keep the socket open
      slow.connect(new InetSocketAddress("127.0.0.1", service.port()));
      slow.getOutputStream().write(("GET /api/submissions/" + id + "/events HTTP/1.1\r\nHost: localhost\r\n"
          + "Authorization: Bearer " + token + "\r\nAccept: text/event-stream\r\n\r\n")
          .getBytes(StandardCharsets.US_ASCII));
      slow.getOutputStream().flush();
      // The slow client reads nothing while another client follows the same submission to its end.
      List<Frame> all;
      try (SseClient fast = service.events(id, token, Map.of())) {
        all = fast.untilEnd(Duration.ofSeconds(60));
      }
      assertEquals("BENCHMARKED", all.get(all.size() - 1).event());
      assertEquals(EVENTS + 7, all.size(), "the reading client got every event");
      for (int i = 0; i < all.size(); i++) {
        assertEquals(i + 1, all.get(i).id());
      }

      // The slow one was cut off: what it can still read stops short of the end.
      String received = readUntilClosed(slow.getInputStream());
      int lastComplete = 0;
      Pattern idLine = Pattern.compile("(?m)^id: (\\d+)$");
      String[] blocks = received.split("\n\n", -1);
      // The last block may be cut short: only blocks followed by a blank line count.
      for (int i = 0; i < blocks.length - 1; i++) {
        Matcher id2 = idLine.matcher(blocks[i]);
        if (id2.find()) {
          int seen = Integer.parseInt(id2.group(1));
          assertEquals(lastComplete + 1, seen, "the slow client's events were in order before the cut");
          lastComplete = seen;
        }
      }
      assertFalse(received.contains("event: BENCHMARKED"), "the slow client was disconnected before the end");
      assertTrue(lastComplete < EVENTS + 7);
      assertTrue(service.metricSum("kernel_runner_sse_streams_dropped_total{reason=\"slow_client\"") >= 1,
          "counted as dropped for being slow");

      // It comes back with the last id it has and gets the rest, nothing twice, nothing missing.
      try (SseClient resumed = service.events(id, token, Map.of("Last-Event-ID", String.valueOf(lastComplete)))) {
        List<Frame> rest = resumed.untilEnd(Duration.ofSeconds(60));
        assertEquals(lastComplete + 1, rest.get(0).id());
        assertEquals(EVENTS + 7, rest.get(rest.size() - 1).id());
        assertEquals(EVENTS + 7 - lastComplete, rest.size());
      }
    }
  }

  /**
   * A client dropped as too slow loses its socket at once, with what was queued for it: here more than the kernel's
   * buffers can take (16 MiB may be queued), which a graceful close would have sent first, keeping the socket
   * (and the queue) until the idle timeout since this client reads nothing.
   */
  @Test
  void aDroppedClientsSocketIsClosedAtOnceWithWhatWasQueuedForIt() throws Exception {
    // A Vert.x of its own: two services on one event bus would answer each other's requests.
    Vertx vertx = Vertx.vertx();
    try (TestService big = TestService.start(vertx, Map.of("SSE_MAX_PENDING_BYTES", String.valueOf(16 << 20)))) {
      String token = big.userToken("sloane");
      String id = big.submit(token, "// agent: flood\n// events: 8000\n// size: 4000");
      try (Socket slow = new Socket()) {
        slow.setReceiveBufferSize(4096);
        slow.connect(new InetSocketAddress("127.0.0.1", big.port()));
        slow.getOutputStream().write(("GET /api/submissions/" + id + "/events HTTP/1.1\r\nHost: localhost\r\n"
            + "Authorization: Bearer " + token + "\r\nAccept: text/event-stream\r\n\r\n")
            .getBytes(StandardCharsets.US_ASCII));
        slow.getOutputStream().flush();
        big.awaitFinished(id, Duration.ofSeconds(60));
        long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
        while (big.metricSum("kernel_runner_sse_streams_dropped_total{reason=\"slow_client\"") < 1) {
          assertTrue(System.nanoTime() < deadline, "the slow client was dropped");
          Thread.sleep(100);
        }
        assertTrue(serverSideClosed(big.port(), slow.getLocalPort(), Duration.ofSeconds(5)),
            "the server closed its end while the client still read nothing");
      }
    } finally {
      vertx.close().toCompletionStage().toCompletableFuture().get(30, java.util.concurrent.TimeUnit.SECONDS);
    }
  }

  /**
   * Whether the server's end of the connection from {@code clientPort} left the ESTABLISHED state within
   * {@code wait} (Linux's /proc/net/tcp and tcp6: local address:port, remote address:port, state; 01 = ESTABLISHED). False
   * too if that socket is not listed at all (nothing to tell).
   */
  private static boolean serverSideClosed(int serverPort, int clientPort, Duration wait) throws Exception {
    long deadline = System.nanoTime() + wait.toNanos();
    String local = String.format(":%04X", serverPort);
    String remote = String.format(":%04X", clientPort);
    while (true) {
      List<String> lines = new java.util.ArrayList<>();
      for (String table : List.of("/proc/net/tcp", "/proc/net/tcp6")) { // Java's sockets may be IPv6, v4-mapped
        lines.addAll(java.nio.file.Files.readAllLines(java.nio.file.Path.of(table)));
      }
      List<String> states = lines.stream().map(line -> line.trim().split(" +"))
          .filter(f -> f.length > 3 && f[1].endsWith(local) && f[2].endsWith(remote)).map(f -> f[3]).toList();
      if (!states.isEmpty() && !states.contains("01")) {
        return true;
      }
      if (System.nanoTime() > deadline) {
        System.err.println("the server's end from port " + clientPort + ": " + states);
        return false;
      }
      Thread.sleep(100);
    }
  }

  /** Everything the socket still delivers until the server's reset or close. */
  private static String readUntilClosed(InputStream in) throws IOException {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    byte[] buffer = new byte[65536];
    try {
      int n;
      while ((n = in.read(buffer)) > 0) {
        bytes.write(buffer, 0, n);
      }
    } catch (IOException reset) {
      // a reset ends it too
    }
    return bytes.toString(StandardCharsets.UTF_8);
  }
}
