package dev.kernelrunner.flow;

import static dev.kernelrunner.support.SseClient.types;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.kernelrunner.support.SseClient;
import dev.kernelrunner.support.SseClient.Frame;
import dev.kernelrunner.support.TestService;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonObject;
import io.vertx.junit5.VertxExtension;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * What the real agent printed on an H100 (src/test/resources/agent-transcripts, from
 * remote-agent/scripts/gpu-selftest.sh), replayed through the service: every event reaches the stream in order
 * and the stored submission ends as the agent said.
 */
@ExtendWith(VertxExtension.class)
class AgentTranscriptReplayTest {
  private static final Path TRANSCRIPTS = Path.of("src/test/resources/agent-transcripts");
  private static TestService service;
  private static String token;

  @BeforeAll
  static void start(Vertx vertx) throws Exception {
    service = TestService.start(vertx, Map.of("LOCAL_MAX_CONCURRENT", "4", "MAX_ACTIVE_PER_USER", "50"));
    token = service.userToken("replayer");
  }

  @AfterAll
  static void stop() throws Exception {
    service.close();
  }

  static Stream<String> transcripts() throws Exception {
    try (Stream<Path> files = Files.list(TRANSCRIPTS)) {
      List<String> names = files.map(p -> p.getFileName().toString()).filter(n -> n.endsWith(".jsonl"))
          .map(n -> n.substring(0, n.length() - ".jsonl".length())).sorted().toList();
      assertTrue(names.size() >= 20, "transcripts: " + names);
      return names.stream();
    }
  }

  @ParameterizedTest
  @MethodSource("transcripts")
  void replayedTranscriptEndsAsTheAgentSaid(String name) throws Exception {
    List<JsonObject> printed = new ArrayList<>();
    for (String line : Files.readAllLines(TRANSCRIPTS.resolve(name + ".jsonl"))) {
      printed.add(new JsonObject(line));
    }
    List<String> printedTypes = printed.stream().map(e -> e.getString("type")).toList();
    // The report's pieces are kept beside the submission, never streamed.
    List<String> agentTypes = printedTypes.stream().filter(t -> !"PROFILE_REPORT".equals(t)).toList();
    String mode = agentTypes.contains("PROFILING") ? "profile"
        : agentTypes.contains("BENCHMARKING") || agentTypes.contains("BENCHMARKED") ? "benchmark" : "check";
    String id = service.submit(token, "// agent: replay:" + name, mode);
    try (SseClient stream = service.events(id, token, Map.of())) {
      List<Frame> frames = stream.untilEnd(Duration.ofSeconds(30));
      assertEquals(List.of("IN_QUEUE", "PROVISIONING"), types(frames.subList(0, 2)));
      assertEquals(agentTypes, types(frames.subList(2, frames.size())));
    }
    JsonObject last = printed.get(printed.size() - 1);
    JsonObject stored = service.awaitFinished(id, Duration.ofSeconds(30));
    assertEquals(last.getString("type"), stored.getString("status"));
    if ("BENCHMARKED".equals(last.getString("type"))) {
      assertEquals(last.getDouble("avg_runtime_ms"), stored.getDouble("avg_runtime_ms"));
      assertEquals(last.getJsonArray("test_results").size(), stored.getJsonArray("benchmark_results").size());
      assertEquals("NVIDIA H100 80GB HBM3",
          stored.getJsonObject("result").getJsonObject("device").getJsonObject("start").getString("name"));
    } else if ("PROFILED".equals(last.getString("type"))) {
      assertEquals(last.getInteger("total_tests"), stored.getJsonArray("profile_results").size());
      JsonObject report = stored.getJsonObject("result").getJsonObject("report");
      assertEquals(true, report.getBoolean("stored"), report.encode());
      TestService.Download file = service.download("/api/submissions/" + id + "/profile", token);
      assertEquals(200, file.status());
      assertEquals(last.getJsonObject("report").getInteger("size"), file.body().length);
    } else if (!"CHECKED".equals(last.getString("type"))) {
      assertEquals(last.getString("message"), stored.getJsonObject("error").getString("message"));
    }
  }
}
