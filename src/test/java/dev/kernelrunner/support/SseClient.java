package dev.kernelrunner.support;

import io.vertx.core.json.JsonObject;
import java.io.BufferedInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A Server-Sent Events client over a plain socket, so that a test controls the connection: it reads the
 * real HTTP/1.1 response (chunked), parses frames, and can drop the connection like a closed browser tab.
 */
public final class SseClient implements AutoCloseable {
  /** One SSE frame. */
  public record Frame(int id, String event, JsonObject data) {}

  private static final Frame END = new Frame(-1, "<end>", new JsonObject());

  private final Socket socket;
  private final BlockingQueue<Frame> frames = new LinkedBlockingQueue<>();
  private final AtomicInteger heartbeats = new AtomicInteger();
  private final int status;
  private final Map<String, String> headers;
  private final String errorBody;
  private volatile boolean ended;

  private SseClient(Socket socket, int status, Map<String, String> headers, String errorBody) {
    this.socket = socket;
    this.status = status;
    this.headers = headers;
    this.errorBody = errorBody;
  }

  public static SseClient open(int port, String method, String path, Map<String, String> requestHeaders,
                               String body) throws IOException {
    Socket socket = new Socket("127.0.0.1", port);
    socket.setSoTimeout(0);
    byte[] payload = body == null ? new byte[0] : body.getBytes(StandardCharsets.UTF_8);
    StringBuilder request = new StringBuilder(method + " " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        + "Accept: text/event-stream\r\n");
    requestHeaders.forEach((k, v) -> request.append(k).append(": ").append(v).append("\r\n"));
    if (body != null) {
      request.append("Content-Type: application/json\r\nContent-Length: ").append(payload.length).append("\r\n");
    }
    request.append("\r\n");
    OutputStream out = socket.getOutputStream();
    out.write(request.toString().getBytes(StandardCharsets.UTF_8));
    out.write(payload);
    out.flush();
    InputStream in = new BufferedInputStream(socket.getInputStream());
    String statusLine = readLine(in);
    int status = Integer.parseInt(statusLine.split(" ")[1]);
    Map<String, String> headers = new LinkedHashMap<>();
    for (String line = readLine(in); line != null && !line.isEmpty(); line = readLine(in)) {
      int colon = line.indexOf(':');
      headers.put(line.substring(0, colon).trim().toLowerCase(Locale.ROOT), line.substring(colon + 1).trim());
    }
    boolean chunked = "chunked".equalsIgnoreCase(headers.get("transfer-encoding"));
    if (status != 200) {
      String error = chunked ? new String(readAllChunks(in), StandardCharsets.UTF_8)
          : new String(in.readNBytes(Integer.parseInt(headers.getOrDefault("content-length", "0"))),
              StandardCharsets.UTF_8);
      socket.close();
      OpenApiCheck.check(method, path, status, headers.get("content-type"), error.getBytes(StandardCharsets.UTF_8));
      return new SseClient(socket, status, headers, error);
    }
    // A stream: its status and media type are checked (its events are not JSON documents of the description).
    OpenApiCheck.check(method, path, status, headers.get("content-type"), new byte[] {1});
    SseClient client = new SseClient(socket, status, headers, null);
    Thread reader = new Thread(() -> client.read(in, chunked), "sse-client");
    reader.setDaemon(true);
    reader.start();
    return client;
  }

  /** The event types of {@code frames}, in order. */
  public static List<String> types(List<Frame> frames) {
    return frames.stream().map(Frame::event).toList();
  }

  public int status() {
    return status;
  }

  public String header(String name) {
    return headers.get(name.toLowerCase(Locale.ROOT));
  }

  public JsonObject errorJson() {
    return new JsonObject(errorBody);
  }

  public int heartbeats() {
    return heartbeats.get();
  }

  /** The next frame, or null if none came in time or the stream ended. */
  public Frame next(Duration timeout) throws InterruptedException {
    Frame frame = frames.poll(timeout.toMillis(), TimeUnit.MILLISECONDS);
    if (frame == END) {
      frames.add(END);
      return null;
    }
    return frame;
  }

  /** The next frame of {@code event}, skipping others; null if none in time. */
  public Frame nextOf(String event, Duration timeout) throws InterruptedException {
    long deadline = System.nanoTime() + timeout.toNanos();
    while (System.nanoTime() < deadline) {
      Frame frame = next(Duration.ofNanos(Math.max(1, deadline - System.nanoTime())));
      if (frame == null) {
        return null;
      }
      if (frame.event().equals(event)) {
        return frame;
      }
    }
    return null;
  }

  /** Every frame until the server ends the stream; fails if it does not end in time. */
  public List<Frame> untilEnd(Duration timeout) throws InterruptedException {
    List<Frame> all = new ArrayList<>();
    long deadline = System.nanoTime() + timeout.toNanos();
    while (true) {
      long left = deadline - System.nanoTime();
      Frame frame = left <= 0 ? null : frames.poll(left, TimeUnit.NANOSECONDS);
      if (frame == null) {
        throw new AssertionError("stream did not end within " + timeout + "; got " + all);
      }
      if (frame == END) {
        frames.add(END);
        return all;
      }
      all.add(frame);
    }
  }

  public boolean ended() {
    return ended;
  }

  @Override
  public void close() throws IOException {
    socket.close();
  }

  private void read(InputStream in, boolean chunked) {
    try {
      InputStream body = chunked ? new ChunkedStream(in) : in;
      StringBuilder line = new StringBuilder();
      int id = -1;
      String event = "message";
      StringBuilder data = new StringBuilder();
      int c;
      ByteArrayOutputStream bytes = new ByteArrayOutputStream();
      while ((c = body.read()) != -1) {
        if (c != '\n') {
          bytes.write(c);
          continue;
        }
        line.setLength(0);
        line.append(bytes.toString(StandardCharsets.UTF_8));
        bytes.reset();
        String text = line.toString();
        if (text.isEmpty()) {
          if (data.length() > 0) {
            frames.add(new Frame(id, event, new JsonObject(data.toString())));
          }
          id = -1;
          event = "message";
          data.setLength(0);
        } else if (text.startsWith(":")) {
          heartbeats.incrementAndGet();
        } else if (text.startsWith("id: ")) {
          id = Integer.parseInt(text.substring(4));
        } else if (text.startsWith("event: ")) {
          event = text.substring(7);
        } else if (text.startsWith("data: ")) {
          data.append(text.substring(6));
        }
      }
    } catch (IOException e) {
      // the connection was closed by either side
    } finally {
      ended = true;
      frames.add(END);
    }
  }

  private static String readLine(InputStream in) throws IOException {
    ByteArrayOutputStream line = new ByteArrayOutputStream();
    int c;
    while ((c = in.read()) != -1 && c != '\n') {
      if (c != '\r') {
        line.write(c);
      }
    }
    return c == -1 && line.size() == 0 ? null : line.toString(StandardCharsets.UTF_8);
  }

  private static byte[] readAllChunks(InputStream in) throws IOException {
    return new ChunkedStream(in).readAllBytes();
  }

  /** Decodes HTTP/1.1 chunked transfer coding; EOF after the last (empty) chunk. */
  private static final class ChunkedStream extends InputStream {
    private final InputStream in;
    private int left;
    private boolean done;

    ChunkedStream(InputStream in) {
      this.in = in;
    }

    @Override
    public int read() throws IOException {
      if (done) {
        return -1;
      }
      if (left == 0) {
        String size = readLine(in);
        if (size == null) {
          done = true;
          return -1;
        }
        if (size.isEmpty()) {
          size = readLine(in);
        }
        if (size == null) {
          done = true;
          return -1;
        }
        left = Integer.parseInt(size.split(";")[0].trim(), 16);
        if (left == 0) {
          done = true;
          return -1;
        }
      }
      int c = in.read();
      if (c == -1) {
        done = true;
        return -1;
      }
      left--;
      return c;
    }
  }
}
