package dev.kernelrunner.cli;

import dev.kernelrunner.model.EventType;
import dev.kernelrunner.model.Mode;
import io.vertx.core.json.JsonObject;
import java.io.BufferedInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.util.function.Consumer;

/**
 * Follows a submission's event stream (SSE) to its end, resuming with {@code Last-Event-ID} whenever the
 * connection drops or stalls, so that no event is shown twice or missed. The end is the terminal event for the
 * submission's mode, or the VERIFIED after a BENCHMARKED whose times were still being checked. A stream quiet for
 * longer than the read timeout (the service sends a heartbeat every 15 s) has stalled: it is resumed, and after
 * {@link #MAX_STALLS} stalls in a row the client gives up; so it does after {@link #GIVE_UP_MILLIS} of failing
 * reconnects. A line or event over {@link #MAX_EVENT_BYTES}, or one that is not an event, ends it in one line.
 */
final class EventFollower {
  /** One event of the stream: its seq, type and fields. */
  record Event(int seq, String type, JsonObject data) {}

  static final int MAX_EVENT_BYTES = 4 << 20;
  static final int MAX_STALLS = 3;
  /** How long reconnects may keep failing before the client gives up. */
  private static final long GIVE_UP_MILLIS = 120_000;

  private final ApiClient api;
  private final String id;
  private final String mode;
  private final long readTimeoutMillis;
  private int lastSeq;
  private Event end;

  EventFollower(ApiClient api, String id, String mode) {
    this.api = api;
    this.id = id;
    this.mode = mode;
    this.readTimeoutMillis = api.readTimeout().toMillis();
  }

  /**
   * Shows every event to {@code onEvent}, returns the one that ended the submission, or null when the service
   * said nothing more will come without one having been seen.
   */
  Event follow(Consumer<Event> onEvent) throws CliError {
    long failingSince = -1;
    long pause = 250;
    int stalls = 0;
    while (true) {
      int seen = lastSeq;
      long started = System.currentTimeMillis();
      boolean opened = false;
      boolean stalled = false;
      CliError problem = null;
      try (InputStream in = api.events(id, lastSeq)) {
        if (in == null) {
          return end;
        }
        opened = true;
        read(in, onEvent);
        problem = new CliError("the event stream of " + id + " keeps ending before its last event: gave up",
            Exit.OTHER, true);
      } catch (SocketTimeoutException e) {
        stalled = true;
      } catch (CliError e) {
        if (!e.passing()) {
          throw e;
        }
        problem = e;
      } catch (IOException e) {
        problem = new CliError("lost the event stream: " + e.getMessage(), Exit.OTHER, true);
      }
      if (end != null) {
        return end;
      }
      stalls = lastSeq > seen ? (stalled ? 1 : 0) : (stalled ? stalls + 1 : stalls);
      if (stalls >= MAX_STALLS) {
        throw new CliError("the event stream of " + id + " stalled (nothing for " + readTimeoutMillis / 1000
            + " s, " + stalls + " times in a row): gave up; 'watch " + id + "' follows it again", Exit.OTHER, true);
      }
      if (lastSeq > seen || (opened && System.currentTimeMillis() - started > readTimeoutMillis)) {
        // It was making progress, or a stream alive for a while: failing starts anew.
        failingSince = -1;
        pause = 250;
      } else if (problem != null) {
        failingSince = failed(failingSince, problem);
      }
      try {
        Thread.sleep(pause);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new CliError("interrupted");
      }
      pause = Math.min(5_000, pause * 2);
    }
  }

  /** When reconnects began failing; throws once they have failed for too long. */
  private static long failed(long since, CliError error) throws CliError {
    long now = System.currentTimeMillis();
    if (since >= 0 && now - since > GIVE_UP_MILLIS) {
      throw error;
    }
    return since < 0 ? now : since;
  }

  private void read(InputStream in, Consumer<Event> onEvent) throws IOException, CliError {
    Lines lines = new Lines(in);
    String seq = null;
    String type = null;
    StringBuilder data = new StringBuilder();
    String line;
    while (end == null && (line = lines.next()) != null) {
      if (line.isEmpty()) {
        if (seq != null && type != null) {
          dispatch(seq, type, data.toString(), onEvent);
        }
        seq = null;
        type = null;
        data.setLength(0);
      } else if (line.startsWith("id:")) {
        seq = line.substring(3).trim();
      } else if (line.startsWith("event:")) {
        type = line.substring(6).trim();
      } else if (line.startsWith("data:")) {
        if (data.length() + line.length() > MAX_EVENT_BYTES) {
          throw malformed(seq, type, "it is over " + (MAX_EVENT_BYTES >> 20) + " MiB");
        }
        data.append(line.substring(5).stripLeading());
      } // ':' comments are heartbeats; other fields (retry:) are not the client's concern
    }
  }

  private void dispatch(String seqText, String type, String data, Consumer<Event> onEvent) throws CliError {
    int seq;
    try {
      seq = Integer.parseInt(seqText);
    } catch (NumberFormatException e) {
      throw malformed(seqText, type, "its id is not a number");
    }
    if (seq <= lastSeq) {
      return;
    }
    JsonObject fields;
    try {
      fields = data.isEmpty() ? new JsonObject() : new JsonObject(data);
    } catch (RuntimeException e) {
      throw malformed(seqText, type, "its data is not a JSON object: "
          + (data.length() > 80 ? data.substring(0, 80) + "..." : data));
    }
    Event event = new Event(seq, type, fields);
    lastSeq = seq;
    try {
      onEvent.accept(event);
      if (ends(event)) {
        end = event;
      }
    } catch (RuntimeException e) {
      throw malformed(seqText, type, CliError.unexpected(e));
    }
  }

  private CliError malformed(String seq, String type, String why) {
    return new CliError("the server sent a malformed event (id " + seq + ", " + type + "): " + why
        + "; is it a kernel-runner?");
  }

  /** The stream's last event for the submission's mode: the service's own rule (model.EventType#endsStream). */
  private boolean ends(Event event) {
    return EventType.parse(event.type())
        .map(type -> type.endsStream(event.data(), Mode.parse(mode).orElse(Mode.BENCHMARK))).orElse(false);
  }

  /** An SSE stream's lines (ended by CRLF, LF or CR), each at most {@link #MAX_EVENT_BYTES}. */
  private final class Lines {
    private final InputStream in;
    private final ByteArrayOutputStream line = new ByteArrayOutputStream();
    private boolean afterCr;

    Lines(InputStream in) {
      this.in = new BufferedInputStream(in, 16 * 1024);
    }

    /** The next line, or null at the end of the stream (an unfinished last line is dropped, as SSE says). */
    String next() throws IOException, CliError {
      line.reset();
      for (int b = in.read(); b >= 0; b = in.read()) {
        if (b == '\n' && afterCr) {
          afterCr = false;
          continue;
        }
        afterCr = b == '\r';
        if (b == '\n' || b == '\r') {
          return line.toString(StandardCharsets.UTF_8);
        }
        if (line.size() >= MAX_EVENT_BYTES) {
          throw new CliError("the server sent an event stream line over " + (MAX_EVENT_BYTES >> 20)
              + " MiB: refused (is it a kernel-runner?)");
        }
        line.write(b);
      }
      return null;
    }
  }
}
