package dev.kernelrunner.dstack;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.kernelrunner.backend.AgentOutput;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

class LogFollowerTest {

  /** A log as logs/poll serves it: events with increasing timestamps, each a chunk of the bytes in base64. */
  private static List<JsonObject> events(byte[] bytes, int[] cuts) {
    List<JsonObject> events = new ArrayList<>();
    Instant at = Instant.parse("2026-11-23T18:00:00Z");
    int from = 0;
    for (int cut : cuts) {
      events.add(event(at, bytes, from, cut));
      at = at.plusMillis(500);
      from = cut;
    }
    if (from < bytes.length) {
      events.add(event(at, bytes, from, bytes.length));
    }
    return events;
  }

  private static JsonObject event(Instant at, byte[] bytes, int from, int to) {
    byte[] chunk = java.util.Arrays.copyOfRange(bytes, from, to);
    return new JsonObject().put("timestamp", at.toString()).put("log_source", "stdout")
        .put("message", Base64.getEncoder().encodeToString(chunk));
  }

  private static List<String> texts(List<LogFollower.Line> lines) {
    return lines.stream().map(LogFollower.Line::text).toList();
  }

  @Test
  void linesSplitAcrossEventsAndCrlfComeOutWhole() {
    byte[] log = "first\r\nsecond line\r\nJSON_EVENT:abc:{}\r\nno end".getBytes(StandardCharsets.UTF_8);
    LogFollower follower = new LogFollower(LogFollower.Position.START);
    List<JsonObject> all = events(log, new int[] {3, 6, 7, 20});
    List<String> seen = new ArrayList<>(texts(follower.accept(new JsonArray(all.subList(0, 2)))));
    assertEquals(List.of(), seen, "'fir' and 'st\\r' are no line yet");
    seen.addAll(texts(follower.accept(new JsonArray(all.subList(2, all.size())))));
    assertEquals(List.of("first", "second line", "JSON_EVENT:abc:{}"), seen);
    assertEquals(List.of("no end"), texts(follower.finish()), "the last line at the end of the run");
    assertEquals(List.of(), follower.finish());
  }

  /**
   * What a poll from {@code startTime} gets: file storage serves events strictly after it (filelog.py:81),
   * CloudWatch from it on (aws.py:167-168).
   */
  private static JsonArray served(List<JsonObject> all, String startTime, boolean inclusive) {
    return new JsonArray(all.stream().filter(e -> {
      if (startTime == null) {
        return true;
      }
      int order = Instant.parse(e.getString("timestamp")).compareTo(Instant.parse(startTime));
      return inclusive ? order >= 0 : order > 0;
    }).toList());
  }

  @Test
  void startingAtAnyLinesPositionGivesExactlyTheLinesAfterIt() {
    StringBuilder text = new StringBuilder();
    for (int i = 0; i < 200; i++) {
      text.append("line ").append(i).append(" ").append("é".repeat(i % 7)).append(i % 3 == 0 ? "\r\n" : "\n");
    }
    byte[] log = text.toString().getBytes(StandardCharsets.UTF_8);
    Random random = new Random(7);
    for (int round = 0; round < 20; round++) {
      int[] cuts = random.ints(40, 1, log.length).sorted().distinct().toArray();
      List<JsonObject> all = round % 2 == 0 ? events(log, cuts) : burst(log, cuts, 3);
      LogFollower whole = new LogFollower(LogFollower.Position.START);
      List<LogFollower.Line> lines = new ArrayList<>(whole.accept(new JsonArray(all)));
      lines.addAll(whole.finish());
      assertEquals(200, lines.size());
      for (int k = 0; k < lines.size(); k += 13) {
        // Resume after line k, as a restarted service does, from a line's end and from its start.
        for (LogFollower.Position at : List.of(LogFollower.Position.decode(lines.get(k).end().encode()),
            lines.get(k).start())) {
          for (boolean inclusive : new boolean[] {false, true}) {
            LogFollower resumed = new LogFollower(at);
            List<LogFollower.Line> rest = new ArrayList<>(resumed.accept(served(all, resumed.startTime(), inclusive)));
            rest.addAll(resumed.finish());
            int first = at == lines.get(k).start() ? k : k + 1;
            assertEquals(texts(lines.subList(first, lines.size())), texts(rest), "from " + at + " of line " + k);
          }
        }
      }
    }
  }

  /** As {@link #events}, but stamped as the runner stamps a burst: the counter capped, so stamps repeat. */
  private static List<JsonObject> burst(byte[] bytes, int[] cuts, int perStamp) {
    List<JsonObject> events = events(bytes, cuts);
    Instant at = Instant.parse("2026-11-23T18:00:00Z");
    for (int i = 0; i < events.size(); i++) {
      events.get(i).put("timestamp", at.plusMillis(i / perStamp).toString());
    }
    return events;
  }

  @Test
  void aBurstOfRepeatedTimestampsReadOverManyPollsLosesAndRepeatsNothing() {
    // 1000 lines, one event each, stamped as the runner stamps 1000 events in one second with its counter capped
    // at 9: all but the first ten share one timestamp. The log grows between polls, and each poll reads what is
    // there, so that polls end among the repeated stamps.
    List<JsonObject> all = new ArrayList<>();
    Instant second = Instant.parse("2026-11-23T18:00:05Z");
    for (int i = 0; i < 1000; i++) {
      all.add(new JsonObject().put("timestamp", second.plusMillis(Math.min(i, 9)).toString())
          .put("message", Base64.getEncoder().encodeToString(("line " + i + "\n").getBytes(StandardCharsets.UTF_8))));
    }
    for (boolean inclusive : new boolean[] {false, true}) {
      LogFollower follower = new LogFollower(LogFollower.Position.START);
      List<String> seen = new ArrayList<>();
      for (int written = 7; written <= all.size(); written = Math.min(all.size(), written + 37)) {
        seen.addAll(texts(follower.accept(served(all.subList(0, written), follower.startTime(), inclusive))));
        if (written == all.size()) {
          break;
        }
      }
      assertEquals(1000, seen.size(), "every line once, " + (inclusive ? "CloudWatch" : "file") + " storage");
      for (int i = 0; i < 1000; i++) {
        assertEquals("line " + i, seen.get(i));
      }
      // A restart at the last position reads nothing again.
      LogFollower resumed = new LogFollower(LogFollower.Position.decode(follower.position().encode()));
      assertEquals(List.of(), resumed.accept(served(all, resumed.startTime(), inclusive)));
    }
  }

  @Test
  void aPositionStoredBeforeTimestampsCouldRepeatIsStillRead() {
    LogFollower.Position old = LogFollower.Position.decode("12|2026-11-23T18:00:05.123Z");
    assertEquals(new LogFollower.Position("2026-11-23T18:00:05.123Z", 1, 12), old);
    assertEquals(LogFollower.Position.START, LogFollower.Position.decode("0|"));
    assertEquals("2026-11-23T18:00:05.122Z", new LogFollower(old).startTime());
  }

  @Test
  void timestampsAlwaysCarryAZone() {
    assertEquals("2026-11-23T18:00:05Z", LogFollower.zoned("2026-11-23T18:00:05Z"));
    assertEquals("2026-11-23T18:00:05.1+00:00", LogFollower.zoned("2026-11-23T18:00:05.1+00:00"));
    assertEquals("2026-11-23T18:00:05.123Z", LogFollower.zoned("2026-11-23T18:00:05.123"));
  }

  @Test
  void aRunawayLineIsCutAndTheNextOneIsWhole() {
    byte[] log = ("x".repeat(AgentOutput.MAX_LINE_BYTES + 100) + "\nnext\n").getBytes(StandardCharsets.UTF_8);
    LogFollower follower = new LogFollower(LogFollower.Position.START);
    List<LogFollower.Line> lines = follower.accept(new JsonArray(events(log, new int[] {5000, 700000})));
    assertEquals(2, lines.size());
    assertEquals(AgentOutput.MAX_LINE_BYTES, lines.get(0).text().length());
    assertEquals("next", lines.get(1).text());
  }
}
