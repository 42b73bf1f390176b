package dev.kernelrunner.backend;

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
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.security.SecureRandom;
import java.util.Base64;
import java.util.HexFormat;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The agent protocol: a line {@code JSON_EVENT:<mac>:<json>}, where {@code <mac>} is the hex HMAC-SHA256 of the
 * exact text {@code <json>} under the run's event key, is an event; every other line, an event line without a
 * valid MAC included, is a log line. User code shares the agent's output (a dstack container's log is one
 * terminal stream) but never has the key, so it cannot forge an event.
 */
public final class AgentOutput {
  public static final String PREFIX = "JSON_EVENT:";
  /** Longer lines are cut (by every reader of agent output): a runaway print must not take the service's memory. */
  public static final int MAX_LINE_BYTES = 1 << 20;
  private static final int MAX_TAIL_LINE_CHARS = 2000;
  private static final int MAC_HEX_CHARS = 64;

  private AgentOutput() {}

  /** What one line of the agent's output is. */
  public sealed interface Line {}

  /** A signed event of a known type. */
  public record Event(EventType type, JsonObject fields) implements Line {}

  /** A log line; {@code forged}: it looked like an event but its MAC was missing or wrong. */
  public record Log(String text, boolean forged) implements Line {}

  /** Classifies one line of a run whose events are signed with {@code key}. */
  public static Line classify(String line, EventKey key) {
    if (!line.startsWith(PREFIX)) {
      return new Log(line, false);
    }
    int macEnd = PREFIX.length() + MAC_HEX_CHARS;
    if (line.length() <= macEnd || line.charAt(macEnd) != ':') {
      return new Log(line, true);
    }
    String json = line.substring(macEnd + 1);
    if (!key.verify(line.substring(PREFIX.length(), macEnd), json)) {
      return new Log(line, true);
    }
    Event event = parse(json);
    return event != null ? event : new Log(line, false);
  }

  /** The event in a signed line's JSON, or null when it is not an object with a known {@code type}. */
  static Event parse(String json) {
    try {
      JsonObject object = new JsonObject(json);
      Object type = object.remove("type");
      return EventType.parse(type instanceof String s ? s : null).map(t -> new Event(t, object)).orElse(null);
    } catch (DecodeException | ClassCastException e) {
      return null;
    }
  }

  /** The line the agent writes for {@code json} (tests and fake agents use it). */
  public static String signedLine(EventKey key, String json) {
    return PREFIX + key.sign(json) + ":" + json;
  }

  /** A run's secret event key: 32 random bytes, sent to the agent in base64 inside the payload. */
  public static final class EventKey {
    private static final SecureRandom RANDOM = new SecureRandom();
    private final String base64;
    private final Mac mac;

    private EventKey(String base64) {
      byte[] bytes = Base64.getDecoder().decode(base64);
      if (bytes.length < 16) {
        throw new IllegalArgumentException("an event key has at least 16 bytes");
      }
      this.base64 = base64;
      try {
        mac = Mac.getInstance("HmacSHA256");
        mac.init(new SecretKeySpec(bytes, "HmacSHA256"));
      } catch (GeneralSecurityException e) {
        throw new IllegalStateException("HmacSHA256 is part of every Java runtime", e);
      }
    }

    public static EventKey random() {
      byte[] bytes = new byte[32];
      RANDOM.nextBytes(bytes);
      return new EventKey(Base64.getEncoder().encodeToString(bytes));
    }

    /** From the base64 text in a payload; throws IllegalArgumentException when it is not a key. */
    public static EventKey of(String base64) {
      return new EventKey(base64);
    }

    public String base64() {
      return base64;
    }

    public String sign(String json) {
      return HexFormat.of().formatHex(digest(json));
    }

    /** Only the canonical lowercase hex the agent writes is accepted: one MAC, one spelling. */
    boolean verify(String macHex, String json) {
      byte[] expected = sign(json).getBytes(StandardCharsets.US_ASCII);
      return MessageDigest.isEqual(macHex.getBytes(StandardCharsets.UTF_8), expected);
    }

    // One Mac per key: a run's lines are read by one thread, but a Mac must never be shared unguarded.
    private synchronized byte[] digest(String json) {
      return mac.doFinal(json.getBytes(StandardCharsets.UTF_8));
    }

    @Override
    public String toString() {
      return "EventKey[hidden]";
    }
  }

  /**
   * Reads lines from a process's output, a buffer at a time (not a character at a time through a
   * {@link java.io.Reader}): lines of at most {@link #MAX_LINE_BYTES} bytes, the rest of a longer line skipped,
   * a trailing CR dropped, UTF-8 decoded. One reader per stream; not thread-safe.
   */
  public static final class LineReader {
    private final InputStream in;
    private final byte[] buffer = new byte[16 * 1024];
    private int start;
    private int end;
    private final ByteArrayOutputStream partial = new ByteArrayOutputStream();

    public LineReader(InputStream in) {
      this.in = in;
    }

    /** The next line, or null at the end of the stream (a last line without a newline is still a line). */
    public String readLine() throws IOException {
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

  /**
   * One run's output, line by line: events come back, everything else goes to the log tail. A forged event line
   * (user code printing the protocol) is logged once per run as a warning. Thread-safe.
   */
  public static final class RunOutput {
    private static final Logger log = LoggerFactory.getLogger(RunOutput.class);
    private final String submissionId;
    private final EventKey key;
    private final LogTail tail;
    private final AtomicBoolean warned = new AtomicBoolean();

    public RunOutput(String submissionId, EventKey key, int tailLines) {
      this.submissionId = submissionId;
      this.key = key;
      this.tail = new LogTail(tailLines);
    }

    /** The event on this line, or null when it is a log line. */
    public Event accept(String line) {
      Line classified = classify(line, key);
      if (classified instanceof Event event) {
        return event;
      }
      if (((Log) classified).forged() && warned.compareAndSet(false, true)) {
        log.warn("submission {}: its output has an event line without a valid signature (user code printing the "
            + "protocol?); such lines are kept as log lines", submissionId);
      }
      tail.add(line);
      return null;
    }

    /** A line that is a log line whatever it says (the agent's stderr). */
    public void tail(String line) {
      tail.add(line);
    }

    public List<String> tail() {
      return tail.lines();
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
