package dev.kernelrunner.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.kernelrunner.support.TestService;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonObject;
import io.vertx.junit5.VertxExtension;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.PrintStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/** The terminal client against the real service (HTTP, SSE), run in-process with its own streams and environment. */
@ExtendWith(VertxExtension.class)
class TerminalClientTest {
  private static TestService service;
  private static String token;
  @TempDir
  static Path files;

  @BeforeAll
  static void start(Vertx vertx) throws Exception {
    service = TestService.start(vertx, Map.of("LOCAL_MAX_CONCURRENT", "4", "MAX_ACTIVE_PER_USER", "10"));
    token = service.userToken("terminal");
  }

  @AfterAll
  static void stop() throws Exception {
    service.close();
  }

  /** What one command printed and how it exited. */
  record Run(int exit, String out, String err) {}

  private static Run run(Map<String, String> env, String... args) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    int exit = new TerminalClient(new PrintStream(out, true, StandardCharsets.UTF_8),
        new PrintStream(err, true, StandardCharsets.UTF_8), env).run(args);
    return new Run(exit, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
  }

  private static Map<String, String> env() {
    return Map.of("KERNEL_RUNNER_SERVER", "http://127.0.0.1:" + service.port(), "KERNEL_RUNNER_TOKEN", token,
        "HOME", files.toString());
  }

  private static String source(String name, String code) throws IOException {
    Path file = files.resolve(name);
    Files.writeString(file, code);
    return file.toString();
  }

  @Test
  void aSubmissionIsFollowedToItsEndAndItsResultsPrinted() throws Exception {
    Run run = run(env(), "submit", source("ok.cu", "// agent: ok\n// timing: verified"), "--problem", "leaky-relu",
        "--gpu", "local");
    assertEquals(0, run.exit(), run.err() + run.out());
    String out = run.out();
    for (String expected : List.of("submitted ", "queued", "compiling", "checking 2 tests", "  ✓ 1 n = 1024",
        "  ✓ 2 n = 65536", "benchmarking 2 tests",
        "benchmarked (times replayed out of the submission's reach); the profiler is auditing its times (",
        "times verified (times replayed out of the submission's reach)", "runtime (ms)", "geometric mean 0.7071 ms",
        "BENCHMARKED")) {
      assertTrue(out.contains(expected), "missing '" + expected + "' in:\n" + out);
    }
    assertEquals("", run.err());
  }

  @Test
  void anUnrankedResultSaysWhyItDoesNotRank() throws Exception {
    Run run = run(env(), "submit", source("busy.cu", "// agent: ok\n// timing: verified\n"
        + "// timing-method: replayed-unranked"), "--problem", "leaky-relu", "--gpu", "local");
    assertEquals(0, run.exit(), run.err() + run.out());
    assertTrue(run.out().contains("benchmarked (replayed, not ranked: the GPU's empty event window read 2.208 us"),
        run.out());
  }

  @Test
  void theExitStatusSaysHowItEnded() throws Exception {
    Map<String, Integer> expected = Map.of(
        "// agent: replay:fault-compile-error", Exit.COMPILE_ERROR,
        "// agent: replay:fault-wrong", Exit.WRONG_ANSWER,
        "// agent: crash", Exit.RUNTIME_ERROR,
        "// agent: ok", Exit.OK);
    for (Map.Entry<String, Integer> case_ : expected.entrySet()) {
      Run run = run(env(), "submit", source("case.cu", case_.getKey()), "--problem", "leaky-relu", "--gpu", "local");
      assertEquals((int) case_.getValue(), run.exit(), case_.getKey() + ":\n" + run.out() + run.err());
    }
    Run compile = run(env(), "submit", source("bad.cu", "// agent: replay:fault-compile-error"), "--problem",
        "leaky-relu", "--gpu", "local");
    assertTrue(compile.out().contains("COMPILE_ERROR: compilation failed"), compile.out());
    assertTrue(compile.out().contains("identifier \"undefined_symbol\" is undefined"), compile.out());
  }

  @Test
  void jsonIsTheFinalSubmissionForScripts() throws Exception {
    Run run = run(env(), "submit", source("ok.cu", "// agent: ok"), "--problem", "leaky-relu", "--gpu", "local",
        "--json");
    assertEquals(0, run.exit(), run.err());
    JsonObject submission = new JsonObject(run.out());
    assertEquals("BENCHMARKED", submission.getString("status"));
    assertEquals("cuda", submission.getString("language"));
    Run status = run(env(), "status", submission.getString("id"), "--json");
    assertEquals(submission.getString("id"), new JsonObject(status.out()).getString("id"));
  }

  @Test
  void cancelAndWatch() throws Exception {
    String id = service.submit(token, "// agent: hang");
    Run cancel = run(env(), "cancel", id);
    assertEquals(0, cancel.exit(), cancel.err());
    assertTrue(cancel.out().contains("CANCELLED"), cancel.out());
    Run watch = run(env(), "watch", id);
    assertEquals(Exit.OTHER, watch.exit());
    assertTrue(watch.out().contains("CANCELLED"), watch.out());
  }

  @Test
  void aDroppedStreamResumesWithoutRepeatingOrMissingAnEvent() throws Exception {
    String id = service.submit(token, "// agent: ok\n// delay: 0.2");
    try (CuttingProxy proxy = new CuttingProxy(service.port())) {
      Map<String, String> env = new HashMap<>(env());
      env.put("KERNEL_RUNNER_SERVER", "http://127.0.0.1:" + proxy.port());
      Run run = run(env, "watch", id);
      assertEquals(0, run.exit(), run.err() + run.out());
      assertTrue(proxy.cut.get() >= 1, "the proxy cut a stream");
      assertEquals(1, count(run.out(), "queued"), run.out());
      assertEquals(1, count(run.out(), "compiling"), run.out());
      assertEquals(2, count(run.out(), "  ✓ 1 "), run.out()); // once checked, once benchmarked
      assertEquals(1, count(run.out(), "benchmarked"), run.out());
    }
  }

  @Test
  void historyPagesThroughEverySubmissionNewestFirst() throws Exception {
    String historian = service.userToken("historian");
    List<String> ids = new java.util.ArrayList<>();
    for (int i = 0; i < 3; i++) {
      ids.add(0, service.submit(historian, "// agent: ok"));
    }
    Map<String, String> env = new HashMap<>(env());
    env.put("KERNEL_RUNNER_TOKEN", historian);
    Run first = run(env, "history", "--limit", "2");
    assertEquals(0, first.exit(), first.err());
    List<String> lines = first.out().lines().toList();
    assertEquals(4, lines.size(), first.out()); // the heading, two rows, how to get the next page
    assertTrue(lines.get(0).startsWith("id ") && lines.get(0).endsWith("geomean (ms)"), lines.get(0));
    assertTrue(lines.get(1).startsWith(ids.get(0) + "  ") && lines.get(1).contains("leaky-relu"), first.out());
    assertTrue(lines.get(2).startsWith(ids.get(1) + "  "), first.out());
    assertTrue(lines.get(3).startsWith("more: history --before ") && lines.get(3).endsWith(" --limit 2"),
        lines.get(3));
    String cursor = lines.get(3).split(" ")[3];
    Run second = run(env, "history", "--limit", "2", "--before", cursor);
    assertEquals(0, second.exit(), second.err());
    assertEquals(2, second.out().lines().count(), second.out()); // the heading, the last row; no next page
    assertTrue(second.out().lines().toList().get(1).startsWith(ids.get(2) + "  "), second.out());
    assertEquals("no more submissions\n", run(env, "history", "--problem", "nope", "--before", cursor).out());
    assertEquals(Exit.USAGE, run(env, "history", "--limit", "0").exit());
  }

  @Test
  void showPrintsTheSubmissionWithItsCode() throws Exception {
    String code = "// agent: ok\n// the code as sent, line 2";
    String id = service.submit(token, code);
    service.awaitFinished(id, Duration.ofSeconds(30));
    Run show = run(env(), "show", id);
    assertEquals(0, show.exit(), show.err());
    assertTrue(show.out().startsWith(id + ": BENCHMARKED (leaky-relu, local, float32, cuda, benchmark)"), show.out());
    assertTrue(show.out().contains("geometric mean"), show.out());
    assertTrue(show.out().endsWith("---- code (cuda)\n" + code + "\n"), show.out());
    assertEquals(code, new JsonObject(run(env(), "show", id, "--json").out()).getString("code"));
    assertTrue(!run(env(), "status", id).out().contains("line 2"));
  }

  @Test
  void aProfileShowsItsFiguresAndItsReportDownloads() throws Exception {
    Run run = run(env(), "submit", source("profile.cu", "// agent: ok"), "--problem", "leaky-relu", "--gpu", "local",
        "--mode", "profile");
    assertEquals(0, run.exit(), run.err() + run.out());
    String id = run.out().lines().findFirst().orElseThrow().substring("submitted ".length());
    for (String expected : List.of("profiling with Nsight Compute", "  ✓ 1 n = 1024: 0.01000 ms",
        "      add(const float *, const float *, float *, unsigned long): 0.01000 ms, DRAM 1000 GB/s (30.00% of peak)",
        "        hint: Memory is more heavily utilized than Compute", "profiled with Nsight Compute fake",
        "bytes): profile download " + id, "PROFILED")) {
      assertTrue(run.out().contains(expected), "missing '" + expected + "' in:\n" + run.out());
    }
    Run status = run(env(), "status", id);
    assertTrue(status.out().contains("DRAM 1000 GB/s"), status.out());

    Path report = files.resolve("report.ncu-rep");
    Run download = run(env(), "profile", "download", id, "--output", report.toString());
    assertEquals(0, download.exit(), download.err());
    byte[] bytes = Files.readAllBytes(report);
    assertEquals(384_000, bytes.length);
    String sha256 = java.util.HexFormat.of().formatHex(java.security.MessageDigest.getInstance("SHA-256")
        .digest(bytes));
    assertEquals("saved " + report + " (384000 bytes, SHA-256 " + sha256 + ")\n", download.out());
    Path dir = Files.createDirectories(files.resolve("reports"));
    assertEquals(0, run(env(), "profile", "download", id, "--output", dir.toString()).exit());
    assertTrue(Files.exists(dir.resolve(id + "-profile.ncu-rep")));

    String benchmark = service.submit(token, "// agent: ok");
    service.awaitFinished(benchmark, Duration.ofSeconds(30));
    Run none = run(env(), "profile", "download", benchmark, "--output", dir.toString());
    assertEquals(Exit.OTHER, none.exit());
    assertTrue(none.err().contains("(HTTP 404)"), none.err());
  }

  @Test
  void problemsAndTheLeaderboardFromTheConfigFile() throws Exception {
    Path config = files.resolve(".config/kernel-runner/config.json");
    Files.createDirectories(config.getParent());
    Files.writeString(config, new JsonObject().put("server", "http://127.0.0.1:" + service.port())
        .put("token", token).encode());
    Files.setPosixFilePermissions(config, PosixFilePermissions.fromString("rw-------"));
    Map<String, String> home = Map.of("HOME", files.toString());
    Run problems = run(home, "problems");
    assertEquals(0, problems.exit(), problems.err());
    assertTrue(problems.out().contains("leaky-relu"), problems.out());
    Run found = run(home, "problems", "--tag", "activation", "--search", "gelu");
    assertEquals(0, found.exit(), found.err());
    assertTrue(found.out().startsWith("gelu ") && found.out().contains("new-gelu") && !found.out().contains("relu "),
        found.out());
    Run show = run(home, "problems", "show", "leaky-relu");
    assertEquals(0, show.exit(), show.err());
    assertTrue(show.out().contains("  __global__ void solution(const float* input, float alpha, float* output, "
        + "size_t M, size_t N)\n"), show.out());
    assertTrue(show.out().contains("extern \"C\" void solution("), show.out());
    Run starter = run(home, "problems", "show", "leaky-relu", "--starter", "--language", "hip");
    assertEquals(0, starter.exit(), starter.err());
    assertTrue(starter.out().startsWith("#include <hip/hip_runtime.h>\n") && starter.out().endsWith("}\n"),
        starter.out());
    Run me = run(home, "me");
    assertEquals(0, me.exit(), me.err());
    assertTrue(me.out().contains("fast_p over the catalog (baseline: PyTorch eager"), me.out());
    Run unknown = run(home, "problems", "show", "no-such-problem");
    assertEquals(Exit.OTHER, unknown.exit());
    assertTrue(unknown.err().contains("404"), unknown.err());
    Run board = run(home, "leaderboard", "leaky-relu", "--gpu", "local");
    assertEquals(0, board.exit(), board.err());
    assertTrue(board.out().startsWith("leaky-relu on local (float32)"), board.out());
    Run missing = run(home, "leaderboard", "leaky-relu");
    assertEquals(Exit.USAGE, missing.exit());
    assertEquals("kernel-runner: leaderboard needs --gpu\n", missing.err());
  }

  @Test
  void anAdminMeasuresTheBaselinesAndWatchesAJob() throws Exception {
    Map<String, String> admin = Map.of("KERNEL_RUNNER_SERVER", "http://127.0.0.1:" + service.port(),
        "KERNEL_RUNNER_TOKEN", TestService.ADMIN_TOKEN, "HOME", files.toString());
    Run refused = run(env(), "baselines", "measure", "--gpu", "local", "leaky-relu");
    assertEquals(Exit.OTHER, refused.exit());
    assertTrue(refused.err().contains("admin only"), refused.err());
    Run measure = run(admin, "baselines", "measure", "--gpu", "local", "leaky-relu");
    assertEquals(0, measure.exit(), measure.err());
    assertTrue(measure.out().startsWith("1 baseline jobs queued on local"), measure.out());
    String id = measure.out().split("\n")[1].split(" ")[0];
    Run watch = run(admin, "watch", id);
    assertEquals(0, watch.exit(), watch.err());
    assertTrue(watch.out().contains("  ✓ 1 n = 1024: eager 2.000 ms, torch_compile 1.000 ms\n"), watch.out());
    assertTrue(watch.out().contains("baselines measured: leaky-relu float32 on Test GPU"), watch.out());
    long deadline = System.nanoTime() + java.time.Duration.ofSeconds(30).toNanos();
    Run list = run(env(), "baselines", "--gpu", "local", "--problem", "leaky-relu");
    while (!list.out().contains("job " + id) && System.nanoTime() < deadline) {
      Thread.sleep(100);
      list = run(env(), "baselines", "--gpu", "local", "--problem", "leaky-relu");
    }
    assertEquals(0, list.exit(), list.err());
    assertTrue(list.out().contains("local    leaky-relu                     float32   eager          "
        + "4.000 ms (n = 65536) job " + id), list.out());
    Run bad = run(admin, "baselines", "measure", "--gpu", "local", "no-such-problem");
    assertEquals(Exit.OTHER, bad.exit());
    assertTrue(bad.err().contains("problems[0]"), bad.err());
  }

  @Test
  void whatIsMissingIsSaidInOneLine() throws Exception {
    Run noToken = run(Map.of("HOME", files.resolve("nowhere").toString(),
        "KERNEL_RUNNER_SERVER", "http://127.0.0.1:" + service.port()), "problems");
    assertEquals(Exit.OTHER, noToken.exit());
    assertEquals(1, noToken.err().lines().count(), noToken.err());
    assertTrue(noToken.err().contains("no token: pass --token TOKEN, set KERNEL_RUNNER_TOKEN"), noToken.err());

    int closed;
    try (ServerSocket socket = new ServerSocket(0)) {
      closed = socket.getLocalPort();
    }
    Run unreachable = run(env(), "problems", "--server", "http://127.0.0.1:" + closed);
    assertEquals(Exit.OTHER, unreachable.exit());
    assertEquals(1, unreachable.err().lines().count(), unreachable.err());
    assertTrue(unreachable.err().contains("cannot reach http://127.0.0.1:" + closed), unreachable.err());

    Run badToken = run(env(), "problems", "--token", "wrong");
    assertEquals(Exit.OTHER, badToken.exit());
    assertTrue(badToken.err().contains("refused the token"), badToken.err());

    Run badField = run(env(), "submit", source("ok.cu", "// agent: ok"), "--problem", "leaky-relu", "--gpu", "nope");
    assertEquals(Exit.OTHER, badField.exit());
    assertTrue(badField.err().contains("gpu_type:"), badField.err());

    Run language = run(env(), "submit", source("kernel.txt", "x"), "--problem", "leaky-relu", "--gpu", "local");
    assertEquals(Exit.USAGE, language.exit());
    assertTrue(language.err().contains("--language cuda|hip"), language.err());
    assertEquals(Exit.USAGE, run(env(), "frobnicate").exit());
  }

  @Test
  void ctrlCAsksTheServiceToCancel() throws Exception {
    // A user's terminal gives the client Ctrl-C's default disposition; a test run in a background job (a shell
    // without job control starts those with SIGINT ignored, which a child inherits and the JVM then keeps) does
    // not: the client starts with the default whatever this process inherited (GNU env, coreutils 8.31+).
    List<String> argv = List.of("env", "--default-signal=INT",
        Path.of(System.getProperty("java.home"), "bin", "java").toString(), "-cp",
        System.getProperty("java.class.path"), dev.kernelrunner.Main.class.getName(), "submit",
        source("hang.cu", "// agent: hang"), "--problem", "leaky-relu", "--gpu", "local");
    ProcessBuilder builder = new ProcessBuilder(argv).redirectErrorStream(true);
    builder.environment().putAll(env());
    Process client = builder.start();
    try {
      java.io.BufferedReader lines = new java.io.BufferedReader(
          new java.io.InputStreamReader(client.getInputStream(), StandardCharsets.UTF_8));
      String first = lines.readLine();
      assertTrue(first != null && first.startsWith("submitted "), String.valueOf(first));
      String id = first.substring("submitted ".length()).trim();
      long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
      while (!"COMPILING".equals(service.submission(id).getString("status")) && System.nanoTime() < deadline) {
        Thread.sleep(50);
      }
      new ProcessBuilder("kill", "-INT", String.valueOf(client.pid())).inheritIO().start().waitFor();
      assertTrue(client.waitFor(30, java.util.concurrent.TimeUnit.SECONDS), "the client ended after Ctrl-C");
      String rest = new String(client.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      assertEquals(Exit.OTHER, client.exitValue(), rest);
      assertTrue(rest.contains("kernel-runner: cancelled " + id), rest);
      assertEquals("CANCELLED", service.awaitFinished(id, Duration.ofSeconds(30)).getString("status"));
    } finally {
      client.destroyForcibly();
    }
  }

  private static int count(String text, String part) {
    int count = 0;
    for (int at = text.indexOf(part); at >= 0; at = text.indexOf(part, at + 1)) {
      count++;
    }
    return count;
  }

  /**
   * A TCP proxy to the service that cuts the first event stream through it right after its first event, as a
   * network drop would; every other connection passes untouched.
   */
  static final class CuttingProxy implements AutoCloseable {
    final AtomicInteger cut = new AtomicInteger();
    private final ServerSocket server;
    private final int target;

    CuttingProxy(int target) throws IOException {
      this.target = target;
      this.server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
      daemon(this::accept);
    }

    int port() {
      return server.getLocalPort();
    }

    private void accept() {
      while (!server.isClosed()) {
        try {
          Socket client = server.accept();
          Socket upstream = new Socket(InetAddress.getLoopbackAddress(), target);
          AtomicBoolean events = new AtomicBoolean();
          daemon(() -> pipe(client, upstream, events, false));
          daemon(() -> pipe(upstream, client, events, true));
        } catch (IOException e) {
          return;
        }
      }
    }

    private static void daemon(Runnable task) {
      Thread thread = new Thread(task, "cutting-proxy");
      thread.setDaemon(true);
      thread.start();
    }

    private void pipe(Socket from, Socket to, AtomicBoolean events, boolean response) {
      StringBuilder seen = new StringBuilder();
      byte[] buffer = new byte[1];  // a byte at a time: the cut falls exactly after the first event
      try (InputStream in = from.getInputStream(); OutputStream out = to.getOutputStream()) {
        int n;
        while ((n = in.read(buffer)) > 0) {
          out.write(buffer, 0, n);
          out.flush();
          seen.append((char) buffer[0]);
          if (!response && seen.indexOf("/events") >= 0) {
            events.set(true);
          }
          if (response && events.get() && cut.get() == 0 && seen.indexOf("event: ") >= 0
              && seen.indexOf("\n\n", seen.indexOf("event: ")) >= 0) {
            cut.incrementAndGet();
            from.close();
            to.close();
            return;
          }
        }
      } catch (IOException e) {
        // one side went away: so does the other
      } finally {
        try {
          from.close();
          to.close();
        } catch (IOException ignored) {
          // closed already
        }
      }
    }

    @Override
    public void close() throws IOException {
      server.close();
    }
  }
}
