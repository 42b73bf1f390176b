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
      List<JsonObject> all = events(log, cuts);
      LogFollower whole = new LogFollower(LogFollower.Position.START);
      List<LogFollower.Line> lines = new ArrayList<>(whole.accept(new JsonArray(all)));
      lines.addAll(whole.finish());
      assertEquals(200, lines.size());
      for (int k = 0; k < lines.size(); k += 13) {
        // Resume after line k, as a restarted service does: poll from the position's timestamp (exclusive).
        LogFollower.Position at = LogFollower.Position.decode(lines.get(k).end().encode());
        LogFollower resumed = new LogFollower(at);
        List<JsonObject> after = all.stream().filter(e -> at.after() == null
            || Instant.parse(e.getString("timestamp")).isAfter(Instant.parse(at.after()))).toList();
        List<LogFollower.Line> rest = new ArrayList<>(resumed.accept(new JsonArray(after)));
        rest.addAll(resumed.finish());
        assertEquals(texts(lines.subList(k + 1, lines.size())), texts(rest), "after line " + k);
        // And from a line's start: that line again, then the rest.
        LogFollower.Position start = lines.get(k).start();
        LogFollower again = new LogFollower(start);
        List<JsonObject> from = all.stream().filter(e -> start.after() == null
            || Instant.parse(e.getString("timestamp")).isAfter(Instant.parse(start.after()))).toList();
        List<LogFollower.Line> replay = new ArrayList<>(again.accept(new JsonArray(from)));
        replay.addAll(again.finish());
        assertEquals(texts(lines.subList(k, lines.size())), texts(replay), "from line " + k);
      }
    }
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
