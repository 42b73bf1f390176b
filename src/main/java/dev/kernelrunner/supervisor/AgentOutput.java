package dev.kernelrunner.supervisor;

import dev.kernelrunner.model.EventType;
import io.vertx.core.json.DecodeException;
import io.vertx.core.json.JsonObject;
import java.io.IOException;
import java.io.Reader;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/** The agent protocol: {@code JSON_EVENT:{"type": ...}} lines are events; every other line is a log line. */
public final class AgentOutput {
  public static final String PREFIX = "JSON_EVENT:";
  /** Longer lines are cut: a runaway print must not take the service's memory. */
  static final int MAX_LINE_CHARS = 1 << 20;
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

  /** Reads one line of at most {@link #MAX_LINE_CHARS}; the rest of a longer line is skipped. Null at EOF. */
  static String readLine(Reader in, StringBuilder buffer) throws IOException {
    buffer.setLength(0);
    int c;
    boolean any = false;
    while ((c = in.read()) != -1) {
      any = true;
      if (c == '\n') {
        break;
      }
      if (buffer.length() < MAX_LINE_CHARS) {
        buffer.append((char) c);
      }
    }
    if (!any) {
      return null;
    }
    int end = buffer.length();
    if (end > 0 && buffer.charAt(end - 1) == '\r') {
      buffer.setLength(end - 1);
    }
    return buffer.toString();
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
