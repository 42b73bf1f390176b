package dev.kernelrunner.cli;

import dev.kernelrunner.model.EventType;
import dev.kernelrunner.model.Mode;
import io.vertx.core.json.JsonObject;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.function.Consumer;

/**
 * Follows a submission's event stream (SSE) to its end, resuming with {@code Last-Event-ID} whenever the
 * connection drops, so that no event is shown twice or missed. The end is the terminal event for the
 * submission's mode, or the VERIFIED after a BENCHMARKED whose times were still being checked.
 */
final class EventFollower {
  /** One event of the stream: its seq, type and fields. */
  record Event(int seq, String type, JsonObject data) {}

  /** How long reconnects may keep failing before the client gives up. */
  private static final long GIVE_UP_MILLIS = 120_000;

  private final ApiClient api;
  private final String id;
  private final String mode;
  private int lastSeq;
  private Event end;

  EventFollower(ApiClient api, String id, String mode) {
    this.api = api;
    this.id = id;
    this.mode = mode;
  }

  /** Shows every event to {@code onEvent}, returns the one that ended the submission. */
  Event follow(Consumer<Event> onEvent) throws CliError {
    long failingSince = -1;
    long pause = 250;
    while (true) {
      try (InputStream in = api.events(id, lastSeq)) {
        read(in, onEvent);
        failingSince = -1;
        pause = 250;
      } catch (CliError e) {
        if (!e.passing()) {
          throw e;
        }
        failingSince = failed(failingSince, e);
      } catch (IOException e) {
        failingSince = failed(failingSince, new CliError("lost the event stream: " + e.getMessage()));
      }
      if (end != null) {
        return end;
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

  private void read(InputStream in, Consumer<Event> onEvent) throws IOException {
    BufferedReader reader = new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8));
    Integer seq = null;
    String type = null;
    StringBuilder data = new StringBuilder();
    String line;
    while (end == null && (line = reader.readLine()) != null) {
      if (line.isEmpty()) {
        if (seq != null && type != null && seq > lastSeq) {
          lastSeq = seq;
          Event event = new Event(seq, type, data.length() == 0 ? new JsonObject() : new JsonObject(data.toString()));
          onEvent.accept(event);
          if (ends(event)) {
            end = event;
          }
        }
        seq = null;
        type = null;
        data.setLength(0);
      } else if (line.startsWith("id:")) {
        seq = Integer.valueOf(line.substring(3).trim());
      } else if (line.startsWith("event:")) {
        type = line.substring(6).trim();
      } else if (line.startsWith("data:")) {
        data.append(line.substring(5).stripLeading());
      } // ':' comments are heartbeats
    }
  }

  /** The stream's last event for the submission's mode: the service's own rule (model.EventType#endsStream). */
  private boolean ends(Event event) {
    return EventType.parse(event.type())
        .map(type -> type.endsStream(event.data(), Mode.parse(mode).orElse(Mode.BENCHMARK))).orElse(false);
  }
}
