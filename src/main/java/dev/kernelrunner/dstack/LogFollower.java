package dev.kernelrunner.dstack;

import dev.kernelrunner.backend.AgentOutput;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;

/**
 * Turns a dstack job's log into whole lines. The runner stores the container's terminal output ANSI-stripped, as
 * whole lines ending in LF, in events of up to 32 KiB (a longer line is cut across events: the runner's ansistrip,
 * runner/internal/runner/executor/executor.go:38-47, 600-601), served by {@code logs/poll} with the text in base64
 * (server/services/logs/__init__.py:120-135). So a line may still span events and a page may end inside one: only
 * whole lines come out; the rest waits for its end (or for {@link #finish}).
 *
 * <p>Timestamps are not unique: the runner stamps whole seconds x 1000 plus a counter capped at 999 a second
 * (runner/.../executor/timestamp.go:36-60), so a burst repeats the last one. File storage serves events strictly
 * after {@code start_time} (services/logs/filelog.py:81), CloudWatch from it on, inclusive (logs/aws.py:167-168);
 * neither hands out a token at the end of what it has (filelog.py:88-91, aws.py:127-131), so there is none to keep
 * between polls. Each poll therefore asks from 1 ms before the last timestamp read ({@link #startTime}) and the
 * follower drops what it has read already: every event before that timestamp, and as many stamped with it as it
 * took. Within a poll, pages follow {@code next_token} as dstack's own client does (api/_public/runs.py:225-243).
 *
 * <p>Where a line ends is a {@link Position}: the last event before it (its timestamp and how many events with that
 * timestamp precede it, itself included) and how many bytes after that to skip. A follower started at a position
 * yields exactly the lines after it, so a restarted service neither repeats nor loses one. Pure: no I/O.
 */
public final class LogFollower {

  /**
   * After the {@code index}-th event stamped {@code at} (and every earlier one; null: from the start), skip
   * {@code skip} bytes.
   */
  public record Position(String at, int index, int skip) {
    public static final Position START = new Position(null, 0, 0);

    /** As stored: {@code <skip>|<timestamp>|<index>} (or {@code <skip>||0} from the start). */
    public String encode() {
      return skip + "|" + (at == null ? "" : at) + "|" + index;
    }

    /** Reads {@link #encode}'s form, and the older {@code <skip>|<timestamp>} (timestamps were unique then). */
    public static Position decode(String text) {
      if (text == null || text.isEmpty()) {
        return START;
      }
      String[] parts = text.split("\\|", -1);
      String at = parts[1].isEmpty() ? null : parts[1];
      int index = parts.length > 2 ? Integer.parseInt(parts[2]) : at == null ? 0 : 1;
      return new Position(at, index, Integer.parseInt(parts[0]));
    }
  }

  /** A whole line, where it starts and where it ends. */
  public record Line(String text, Position start, Position end) {}

  private final ByteArrayOutputStream pending = new ByteArrayOutputStream();
  private int pendingBytes;
  private Position pendingStart;
  /** The last event read: its timestamp (as served and as an instant) and its rank among those stamped so. */
  private String at;
  private Instant atInstant;
  private int index;
  private int skip;
  /** Events stamped {@link #at} seen again by the current poll. */
  private int replayed;
  /** Whether any event was served at all (not counting those read again). */
  private boolean anyEvent;

  public LogFollower(Position from) {
    this.at = from.at();
    this.atInstant = from.at() == null ? null : instant(from.at());
    this.index = from.index();
    this.skip = from.skip();
    this.pendingStart = from;
    this.anyEvent = from.at() != null;
  }

  /**
   * Begins a poll: its {@code start_time}, 1 ms before the last timestamp read, so that both the strictly-after
   * and the inclusive storages serve every event stamped with it again; null at the start.
   */
  public String startTime() {
    replayed = 0;
    return atInstant == null ? null : atInstant.minusMillis(1).toString();
  }

  /** Whether the log has had any event yet. */
  public boolean anyEvent() {
    return anyEvent;
  }

  /** Where everything read so far ends (for a run read to its end). */
  public Position position() {
    return new Position(at, index, 0);
  }

  /** Takes one page of {@code logs/poll} events, in order; answers the lines they complete. */
  public List<Line> accept(JsonArray events) {
    List<Line> lines = new ArrayList<>();
    for (Object item : events) {
      JsonObject event = (JsonObject) item;
      String timestamp = zoned(event.getString("timestamp"));
      Instant stamp = instant(timestamp);
      Position before = new Position(at, index, 0);
      if (atInstant != null) {
        int order = stamp.compareTo(atInstant);
        if (order < 0 || (order == 0 && ++replayed <= index)) {
          continue; // read already: served again by an inclusive start, or by the 1 ms before it
        }
      }
      if (atInstant == null || stamp.isAfter(atInstant)) {
        at = timestamp;
        atInstant = stamp;
        index = 1;
        replayed = 1;
      } else {
        index = replayed;
      }
      anyEvent = true;
      accept(before, Base64.getMimeDecoder().decode(event.getString("message", "")), lines);
    }
    return lines;
  }

  private void accept(Position before, byte[] bytes, List<Line> lines) {
    Position after = new Position(at, index, 0);
    int from = Math.min(skip, bytes.length);
    skip -= from;
    if (skip > 0 || from == bytes.length) {
      // Wholly skipped (or empty): the position moves past it.
      if (pendingBytes == 0) {
        pendingStart = new Position(at, index, skip);
      }
      return;
    }
    if (pendingBytes == 0) {
      pendingStart = new Position(before.at(), before.index(), from);
    }
    int lineStart = from;
    for (int i = from; i < bytes.length; i++) {
      if (bytes[i] != '\n') {
        continue;
      }
      append(bytes, lineStart, i);
      Position end = i + 1 == bytes.length ? after : new Position(before.at(), before.index(), i + 1);
      lines.add(new Line(text(), pendingStart, end));
      pending.reset();
      pendingBytes = 0;
      pendingStart = end;
      lineStart = i + 1;
    }
    append(bytes, lineStart, bytes.length);
    if (pendingBytes == 0) {
      pendingStart = after;
    }
  }

  /** The run is over and its log read to the end: a last line without a newline is still a line. */
  public List<Line> finish() {
    if (pendingBytes == 0) {
      return List.of();
    }
    Line last = new Line(text(), pendingStart, position());
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

  private static Instant instant(String timestamp) {
    return OffsetDateTime.parse(zoned(timestamp)).toInstant();
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
