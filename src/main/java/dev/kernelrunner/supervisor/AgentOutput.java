package dev.kernelrunner.supervisor;

import dev.kernelrunner.model.EventType;
import io.vertx.core.json.DecodeException;
import io.vertx.core.json.JsonObject;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/** The agent protocol: {@code JSON_EVENT:{"type": ...}} lines are events; every other line is a log line. */
public final class AgentOutput {
  public static final String PREFIX = "JSON_EVENT:";
  /** Longer lines are cut: a runaway print must not take the service's memory. */
  static final int MAX_LINE_BYTES = 1 << 20;
  private static final int MAX_TAIL_LINE_CHARS = 2000;

  private AgentOutput() {}

  /** A parsed event line. */
  public record Event(EventType type, JsonObject fields) {}

  /** The event on this line, if it is a well-formed event line of a known type. */
  public static Optional<Event> parse(String line) {
    if (!line.startsWith(PREFIX)) {
      return Optional.empty();
    }
    try {
      JsonObject json = new JsonObject(line.substring(PREFIX.length()));
      Object type = json.remove("type");
      if (type == null) {
        type = json.remove("status");
      }
      return EventType.parse(type instanceof String s ? s : null).map(t -> new Event(t, json));
    } catch (DecodeException | ClassCastException e) {
      return Optional.empty();
    }
  }

  /**
   * Reads lines from a process's output, a buffer at a time (not a character at a time through a
   * {@link java.io.Reader}): lines of at most {@link #MAX_LINE_BYTES} bytes, the rest of a longer line skipped,
   * a trailing CR dropped, UTF-8 decoded. One reader per stream; not thread-safe.
   */
  static final class LineReader {
    private final InputStream in;
    private final byte[] buffer = new byte[16 * 1024];
    private int start;
    private int end;
    private final ByteArrayOutputStream partial = new ByteArrayOutputStream();

    LineReader(InputStream in) {
      this.in = in;
    }

    /** The next line, or null at the end of the stream (a last line without a newline is still a line). */
    String readLine() throws IOException {
      partial.reset();
      boolean any = false;
      while (true) {
        if (start == end) {
          int n = in.read(buffer);
          if (n <= 0) {
            return any ? decode(partial.toByteArray(), partial.size()) : null;
          }
          start = 0;
          end = n;
        }
        any = true;
        int newline = -1;
        for (int i = start; i < end; i++) {
          if (buffer[i] == '\n') {
            newline = i;
            break;
          }
        }
        int stop = newline < 0 ? end : newline;
        if (newline >= 0 && partial.size() == 0 && stop - start <= MAX_LINE_BYTES) {
          String line = decode(buffer, start, stop);
          start = newline + 1;
          return line;
        }
        int room = MAX_LINE_BYTES - partial.size();
        if (room > 0) {
          partial.write(buffer, start, Math.min(room, stop - start));
        }
        if (newline >= 0) {
          start = newline + 1;
          return decode(partial.toByteArray(), partial.size());
        }
        start = end;
      }
    }

    private static String decode(byte[] bytes, int length) {
      return decode(bytes, 0, length);
    }

    private static String decode(byte[] bytes, int from, int to) {
      if (to > from && bytes[to - 1] == '\r') {
        to--;
      }
      return new String(bytes, from, to - from, StandardCharsets.UTF_8);
    }
  }

  /** The last lines the agent printed, for error details. Thread-safe. */
  public static final class LogTail {
    private final int capacity;
    private final ArrayDeque<String> lines = new ArrayDeque<>();

    public LogTail(int capacity) {
      this.capacity = capacity;
    }

    public synchronized void add(String line) {
      if (lines.size() == capacity) {
        lines.removeFirst();
      }
      lines.addLast(line.length() > MAX_TAIL_LINE_CHARS ? line.substring(0, MAX_TAIL_LINE_CHARS) + "…" : line);
    }

    public synchronized List<String> lines() {
      return new ArrayList<>(lines);
    }
  }
}
