package dev.kernelrunner.dstack;

import dev.kernelrunner.backend.AgentOutput;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;

/**
 * Turns a dstack job's log into whole lines. The log is a terminal's output (stdout and stderr merged, CRLF line
 * ends) shipped in chunks cut every 500 ms or 32 KB wherever they fall (runner/internal/runner/executor/
 * executor.go:40-46, 600), served by {@code logs/poll} as events with a unique, increasing timestamp and the
 * chunk in base64 (server/services/logs/__init__.py:116-121, filelog.py). So a line may span events and a page
 * may end inside one: only whole lines come out; the rest waits for its end (or for {@link #finish}).
 *
 * <p>Where a line ends is a {@link Position}: the timestamp of the last event before it (polling is exclusive
 * of {@code start_time}, filelog.py:81) and how many bytes after that to skip. A follower started at a position
 * yields exactly the lines after it, so a restarted service neither repeats nor loses one. Pure: no I/O.
 */
public final class LogFollower {

  /** After the event stamped {@code after} (null: from the start), skip {@code skip} bytes. */
  public record Position(String after, int skip) {
    public static final Position START = new Position(null, 0);

    /** As stored: {@code <skip>|<timestamp>} (or {@code <skip>|} from the start). */
    public String encode() {
      return skip + "|" + (after == null ? "" : after);
    }

    public static Position decode(String text) {
      if (text == null || text.isEmpty()) {
        return START;
      }
      int bar = text.indexOf('|');
      String after = text.substring(bar + 1);
      return new Position(after.isEmpty() ? null : after, Integer.parseInt(text.substring(0, bar)));
    }
  }

  /** A whole line, where it starts and where it ends. */
  public record Line(String text, Position start, Position end) {}

  private final ByteArrayOutputStream pending = new ByteArrayOutputStream();
  private int pendingBytes;
  private Position pendingStart;
  private String lastTimestamp;
  private int skip;

  public LogFollower(Position from) {
    this.lastTimestamp = from.after();
    this.skip = from.skip();
    this.pendingStart = new Position(from.after(), from.skip());
  }

  /** Where the next poll starts ({@code start_time}, exclusive); null at the start. */
  public String lastTimestamp() {
    return lastTimestamp;
  }

  /** Takes one page of {@code logs/poll} events, in order; answers the lines they complete. */
  public List<Line> accept(JsonArray events) {
    List<Line> lines = new ArrayList<>();
    for (Object item : events) {
      JsonObject event = (JsonObject) item;
      accept(zoned(event.getString("timestamp")), Base64.getMimeDecoder().decode(event.getString("message", "")),
          lines);
    }
    return lines;
  }

  private void accept(String timestamp, byte[] bytes, List<Line> lines) {
    String before = lastTimestamp;
    int from = Math.min(skip, bytes.length);
    skip -= from;
    if (skip > 0 || from == bytes.length) {
      // Wholly skipped (or empty): the position moves past it.
      lastTimestamp = timestamp;
      if (pendingBytes == 0) {
        pendingStart = new Position(timestamp, skip);
      }
      return;
    }
    if (pendingBytes == 0) {
      pendingStart = new Position(before, from);
    }
    int lineStart = from;
    for (int i = from; i < bytes.length; i++) {
      if (bytes[i] != '\n') {
        continue;
      }
      append(bytes, lineStart, i);
      Position end = i + 1 == bytes.length ? new Position(timestamp, 0) : new Position(before, i + 1);
      lines.add(new Line(text(), pendingStart, end));
      pending.reset();
      pendingBytes = 0;
      pendingStart = end;
      lineStart = i + 1;
    }
    append(bytes, lineStart, bytes.length);
    lastTimestamp = timestamp;
    if (pendingBytes == 0) {
      pendingStart = new Position(timestamp, 0);
    }
  }

  /** The run is over and its log read to the end: a last line without a newline is still a line. */
  public List<Line> finish() {
    if (pendingBytes == 0) {
      return List.of();
    }
    Line last = new Line(text(), pendingStart, new Position(lastTimestamp, 0));
    pending.reset();
    pendingBytes = 0;
    pendingStart = last.end();
    return List.of(last);
  }

  private void append(byte[] bytes, int from, int to) {
    int room = AgentOutput.MAX_LINE_BYTES - pending.size();
    if (room > 0) {
      pending.write(bytes, from, Math.min(room, to - from));
    }
    pendingBytes += to - from;
  }

  /** The pending bytes as text: UTF-8 (dstack already replaced what was not), trailing CRs dropped. */
  private String text() {
    String text = pending.toString(StandardCharsets.UTF_8);
    int end = text.length();
    while (end > 0 && text.charAt(end - 1) == '\r') {
      end--;
    }
    return text.substring(0, end);
  }

  /** A timestamp with its zone: a naive one is a 500 once the log has lines (filelog.py:81). */
  static String zoned(String timestamp) {
    if (timestamp == null) {
      return null;
    }
    int t = timestamp.indexOf('T');
    String time = t < 0 ? timestamp : timestamp.substring(t);
    boolean hasZone = time.endsWith("Z") || time.indexOf('+') >= 0 || time.lastIndexOf('-') > 0;
    return hasZone ? timestamp : timestamp + "Z";
  }
}
