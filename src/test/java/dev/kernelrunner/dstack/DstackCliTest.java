package dev.kernelrunner.dstack;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.kernelrunner.dstack.DstackOutput.RunState;
import dev.kernelrunner.support.Processes;
import dev.kernelrunner.supervisor.CommandRunner;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.junit5.VertxExtension;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** The CLI wrapper against the fake dstack (a real child process per call), in 0.20 JSON and 0.19 table mode. */
@ExtendWith(VertxExtension.class)
class DstackCliTest {
  private static final Path FAKE = Path.of("src/test/resources/dstack/fake_dstack.py").toAbsolutePath();
  private Path home;
  private Vertx vertx;

  @BeforeEach
  void setUp(Vertx vertx) throws Exception {
    this.vertx = vertx;
    home = Files.createTempDirectory("fake-dstack");
  }

  private DstackCli cli(JsonObject config, Duration timeout) throws Exception {
    Files.writeString(home.resolve("config.json"), config.put("step_seconds", 0.2).encode());
    return new DstackCli(new CommandRunner(vertx), List.of("python3", FAKE.toString()),
        Map.of("FAKE_DSTACK_HOME", home.toString()), timeout);
  }

  private static <T> T await(Future<T> future) throws Exception {
    return future.toCompletionStage().toCompletableFuture().get(60, TimeUnit.SECONDS);
  }

  private static Throwable failure(Future<?> future) throws Exception {
    try {
      await(future);
    } catch (ExecutionException e) {
      return e.getCause();
    }
    throw new AssertionError("expected a failure");
  }

  private Path task(String name, String... commands) throws Exception {
    Path file = home.resolve(name + ".json");
    Files.writeString(file, new JsonObject().put("type", "task").put("name", name)
        .put("commands", new JsonArray(List.of(commands))).put("files", new JsonArray()).encode());
    return file;
  }

  private RunState awaitFinal(DstackCli cli, String name) throws Exception {
    long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
    while (System.nanoTime() < deadline) {
      RunState state = await(cli.run(name));
      if (state.isFinal()) {
        return state;
      }
      Thread.sleep(100);
    }
    throw new AssertionError(name + " never ended");
  }

  @ParameterizedTest
  @ValueSource(strings = {"json", "table"})
  void aRunGoesThroughItsStatusesAndEndsWithItsExitCode(String mode) throws Exception {
    DstackCli cli = cli(new JsonObject().put("mode", mode).put("banner", true), Duration.ofSeconds(20));
    assertEquals(mode.equals("json"), await(cli.supportsJson()));
    await(cli.apply(task("kr-run-1", "echo 'JSON_EVENT:{\"type\": \"COMPILING\"}'", "echo compiled", "exit 3")));
    assertFalse(await(cli.run("kr-run-1")).isFinal());
    RunState end = awaitFinal(cli, "kr-run-1");
    assertEquals("failed", end.status());
    assertEquals(3, end.exitStatus());
    assertEquals("exited (3)", end.statusMessage());
    assertEquals(List.of("JSON_EVENT:{\"type\": \"COMPILING\"}", "compiled"), await(cli.logs("kr-run-1")),
        "the update banner is not a log line");
    if (mode.equals("json")) {
      assertEquals("container_exited_with_error", end.jobTerminationReason());
      assertEquals(0.0123, end.cost());
    }
  }

  @ParameterizedTest
  @ValueSource(strings = {"json", "table"})
  void aCleanExitIsDone(String mode) throws Exception {
    DstackCli cli = cli(new JsonObject().put("mode", mode), Duration.ofSeconds(20));
    await(cli.apply(task("kr-ok-1", "echo fine")));
    RunState end = awaitFinal(cli, "kr-ok-1");
    assertEquals("done", end.status());
    assertEquals(0, end.exitStatus());
  }

  @ParameterizedTest
  @ValueSource(strings = {"json", "table"})
  void noCapacityFailsTheRunWithItsMessage(String mode) throws Exception {
    DstackCli cli = cli(new JsonObject().put("mode", mode).put("no_capacity", true), Duration.ofSeconds(20));
    await(cli.apply(task("kr-cap-1", "echo never")));
    RunState end = awaitFinal(cli, "kr-cap-1");
    assertEquals("failed", end.status());
    assertEquals(mode.equals("json") ? "no capacity" : "no offers", end.statusMessage());
  }

  @ParameterizedTest
  @ValueSource(strings = {"json", "table"})
  void stopEndsTheRunAndItsContainer(String mode) throws Exception {
    DstackCli cli = cli(new JsonObject().put("mode", mode), Duration.ofSeconds(20));
    await(cli.apply(task("kr-stop-1", "echo $$ > container.pid", "sleep 300")));
    Path pidFile = home.resolve("runs/kr-stop-1/container.pid");
    long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
    while (!Files.exists(pidFile) && System.nanoTime() < deadline) {
      await(cli.run("kr-stop-1"));
      Thread.sleep(100);
    }
    long pid = Long.parseLong(Files.readString(pidFile).strip());
    assertTrue(Processes.alive(pid));
    await(cli.stop("kr-stop-1", false));
    RunState end = awaitFinal(cli, "kr-stop-1");
    assertEquals("terminated", end.status());
    assertFalse(Processes.alive(pid), "the container is gone");
  }

  @org.junit.jupiter.api.Test
  void faultsBecomeClearFailures() throws Exception {
    DstackCli erroring = cli(new JsonObject().put("error", new JsonObject().put("apply", "No fleets found")),
        Duration.ofSeconds(20));
    Throwable error = failure(erroring.apply(task("kr-err-1", "true")));
    assertInstanceOf(DstackCli.DstackException.class, error);
    assertEquals("No fleets found", error.getMessage());

    DstackCli noop = cli(new JsonObject().put("apply_noop", true), Duration.ofSeconds(20));
    assertTrue(failure(noop.apply(task("kr-noop-1", "true"))).getMessage().contains("did not submit"));
    assertInstanceOf(DstackCli.NotFound.class, failure(noop.run("kr-noop-1")));

    DstackCli hanging = cli(new JsonObject().put("hang", new JsonArray().add("logs")), Duration.ofSeconds(2));
    long started = System.nanoTime();
    Throwable timeout = failure(hanging.logs("whatever"));
    long took = (System.nanoTime() - started) / 1_000_000;
    assertTrue(timeout.getMessage().contains("did not answer within 2 s"), timeout.getMessage());
    assertTrue(took < 10_000, "took " + took + " ms");
  }
}
