package dev.kernelrunner.load;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.kernelrunner.load.LoadRun.Figures;
import dev.kernelrunner.support.TestService;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonObject;
import io.vertx.junit5.VertxExtension;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * A small run of the load benchmark's phases (hundreds of streams, tens of submissions) against the real
 * service: no event may be lost or duplicated. It asserts correctness only; the figures are the benchmark's
 * (LoadBenchmark, docs/benchmarks.md).
 */
@ExtendWith(VertxExtension.class)
class LoadSmokeTest {

  @Test
  void noEventIsLostOrDuplicatedUnderLoad(Vertx vertx) throws Exception {
    String agent = "python3 " + dev.kernelrunner.support.TestAgents.path("agents/load_agent.py");
    try (TestService service = TestService.start(vertx, Map.of("AGENT_COMMAND", agent,
        "LOCAL_MAX_CONCURRENT", "20", "MAX_ACTIVE_PER_USER", "1000", "SSE_HEARTBEAT_SECONDS", "1",
        "HTTP_MAX_CONNECTIONS_PER_ADDRESS", "10000", "SSE_MAX_STREAMS_PER_USER", "10000",
        "QUOTA_SUBMISSIONS_PER_HOUR", "0", "QUOTA_GPU_SECONDS_PER_DAY", "0"));
         LoadRun run = new LoadRun(vertx, "127.0.0.1", service.port(), TestService.ADMIN_TOKEN, 1000)) {
      run.users(5);
      JsonObject latency = run.latency(20, Duration.ZERO, "// load: events=20 interval_ms=5", 22).values();
      assertEquals(0, latency.getInteger("lost"), latency.encode());
      assertEquals(0, latency.getInteger("duplicated"), latency.encode());
      assertEquals(0, latency.getLong("not_benchmarked"), latency.encode());
      assertEquals(0, latency.getInteger("not_ended"), latency.encode());
      assertEquals(20 * 20, latency.getInteger("events"), "every agent event reached its stream: " + latency.encode());

      List<String> waiting = new ArrayList<>();
      JsonObject streams = run.holdStreams(5, 300, 1, Duration.ofSeconds(1), () -> 0L, waiting).values();
      assertEquals(0, streams.getInteger("lost"), streams.encode());
      assertEquals(0, streams.getInteger("duplicated"), streams.encode());
      assertEquals(0, streams.getLong("without_replay"), streams.encode());
      assertEquals(0, streams.getLong("without_heartbeat"), streams.encode());
      assertEquals(0, streams.getLong("ended_early"), streams.encode());

      Figures cancelled = run.cancel(waiting, 5);
      assertEquals(0, cancelled.values().getInteger("not_cancelled"), cancelled.values().encode());

      JsonObject accepted = run.accept(40, 8, "// load: events=5 interval_ms=1").values();
      assertEquals(0, accepted.getInteger("refused"), accepted.encode());
    }
  }
}
