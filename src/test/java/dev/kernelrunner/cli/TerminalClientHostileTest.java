package dev.kernelrunner.cli;

import static dev.kernelrunner.cli.HostileServer.frame;
import static dev.kernelrunner.cli.HostileServer.json;
import static dev.kernelrunner.cli.HostileServer.write;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The terminal client against a hostile server (a real HTTP server of the test's own): escape sequences in every
 * text it sends, stalled streams, malformed events, 400 MB bodies, and a config file others may change or read.
 * Each fails, if at all, in one line, never with a stack trace, in bounded time and memory.
 */
class TerminalClientHostileTest {
  private static final String TITLE = "\u001b]0;pwned\u0007";
  private static final String CLIPBOARD = "\u001b]52;c;cm0gLXJmIH4K\u0007";
  private static final String CLEAR = "\u001b[2J\u001b[H\u001bc";
  private static final String FAKE_PASS = "\r\u001b[2K\u001b[32m✓ all tests passed\u001b[0m";
  private static final String EIGHT_BIT = "\u009b2J\u009d0;title\u009c\u202eevil";
  private static final long HUGE = 400L << 20;

  @TempDir
  Path home;
  private HostileServer server;

  @BeforeEach
  void start() throws IOException {
    server = new HostileServer();
  }

  @AfterEach
  void stop() {
    server.close();
  }

  record Run(int exit, String out, String err) {}

  private Run run(String... args) {
    return run(Map.of(), args);
  }

  private Run run(Map<String, String> extra, String... args) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    int exit = new TerminalClient(new PrintStream(out, true, StandardCharsets.UTF_8),
        new PrintStream(err, true, StandardCharsets.UTF_8), env(extra)).run(args);
    return new Run(exit, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
  }

  private Map<String, String> env(Map<String, String> extra) {
    Map<String, String> env = new HashMap<>(Map.of("HOME", home.toString(), "KERNEL_RUNNER_SERVER", server.url(),
        "KERNEL_RUNNER_TOKEN", "t", "KERNEL_RUNNER_READ_TIMEOUT_SECONDS", "1"));
    env.putAll(extra);
    return env;
  }

  /** The client as a user runs it, in its own JVM with a 64 MiB heap: what it holds must stay bounded. */
  private Run process(String... args) throws Exception {
    List<String> argv = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
        "-Xmx64m", "-cp", System.getProperty("java.class.path"), dev.kernelrunner.Main.class.getName()));
    argv.addAll(List.of(args));
    ProcessBuilder builder = new ProcessBuilder(argv);
    builder.environment().putAll(env(Map.of()));
    Path out = Files.createTempFile(home, "out", ".txt");
    Path err = Files.createTempFile(home, "err", ".txt");
    Process client = builder.redirectOutput(out.toFile()).redirectError(err.toFile()).start();
    try {
      assertTrue(client.waitFor(120, TimeUnit.SECONDS), "the client ended");
      return new Run(client.exitValue(), Files.readString(out), Files.readString(err));
    } finally {
      client.destroyForcibly();
    }
  }

  private static void assertOneLine(Run run, String expected) {
    assertEquals(Exit.OTHER, run.exit(), run.err() + run.out());
    assertEquals(1, run.err().lines().count(), run.err());
    assertTrue(run.err().startsWith("kernel-runner: "), run.err());
    assertTrue(run.err().contains(expected), "'" + expected + "' not in: " + run.err());
    assertFalse(run.err().contains("Exception") || run.err().contains("\tat "), run.err());
  }

  /** Not a control character a terminal would obey: only newline and tab pass as themselves. */
  private static void assertInert(String text) {
    for (int i = 0; i < text.length(); i++) {
      char c = text.charAt(i);
      boolean control = (c < 0x20 && c != '\n' && c != '\t') || (c >= 0x7f && c <= 0x9f)
          || (c >= '\u202a' && c <= '\u202e') || (c >= '\u2066' && c <= '\u2069');
      assertFalse(control, String.format("U+%04X printed raw at %d in:%n%s", (int) c, i, text));
    }
  }

  private static JsonObject submission(String id, String status) {
    return new JsonObject().put("id", id).put("status", status).put("problem", "leaky-relu" + TITLE)
        .put("gpu_type", "local" + CLEAR).put("dtype", "float32").put("language", "cuda").put("mode", "benchmark")
        .put("created_at", "2026-11-25T10:00:00Z" + FAKE_PASS).put("code", "__global__ void k() {}\n// " + CLIPBOARD
            + EIGHT_BIT)
        .put("error", new JsonObject().put("type", "RUNTIME_ERROR").put("message", "exit 1" + FAKE_PASS)
            .put("details", "log tail\u001b[31m red\n" + CLIPBOARD + "\n" + EIGHT_BIT));
  }

  @Test
  void escapeSequencesFromTheServerAreShownNotObeyed() throws Exception {
    JsonObject broken = submission("s1", "RUNTIME_ERROR");
    server.route("GET /api/submissions/s1", exchange -> json(exchange, 200, broken.encode()))
        .route("GET /api/submissions/s1/events", exchange -> {
          OutputStream out = HostileServer.sse(exchange);
          write(out, frame(1, "IN_QUEUE", new JsonObject().put("position", TITLE).encode()));
          write(out, frame(2, "PROVISIONING", new JsonObject().put("message", CLIPBOARD + CLEAR).encode()));
          write(out, frame(3, "TEST_RESULT", new JsonObject().put("result", new JsonObject().put("status", "PASSED")
              .put("test_id", 1).put("name", "n" + FAKE_PASS)).encode()));
          write(out, frame(4, "RUNTIME_ERROR", new JsonObject().put("message", "crashed" + FAKE_PASS)
              .put("details", "stderr\u001b[2J" + EIGHT_BIT + "\nsecond line" + CLIPBOARD).encode()));
        })
        .route("GET /api/submissions", exchange -> json(exchange, 200, new JsonObject()
            .put("submissions", new JsonArray().add(broken)).put("next_before", "c" + TITLE).encode()))
        .route("GET /api/submissions/s2", exchange -> json(exchange, 400, new JsonObject().put("error", "bad")
            .put("message", "bad request" + CLIPBOARD).put("details", new JsonArray().add(new JsonObject()
                .put("field", "id" + TITLE).put("message", "wrong" + FAKE_PASS))).encode()));

    Run watch = run("watch", "s1");
    assertEquals(Exit.RUNTIME_ERROR, watch.exit(), watch.err() + watch.out());
    assertInert(watch.out() + watch.err());
    assertTrue(watch.out().contains("provisioning: ^[]52;c;cm0gLXJmIH4K^G^[[2J"), watch.out());
    assertTrue(watch.out().contains("RUNTIME_ERROR: crashed^M^[[2K^[[32m✓ all tests passed^[[0m"), watch.out());
    assertTrue(watch.out().contains("  stderr^[[2J\\u009b2J\\u009d0;title\\u009c\\u202eevil"), watch.out());

    Run show = run("show", "s1");
    assertEquals(Exit.OK, show.exit(), show.err());
    assertInert(show.out() + show.err());
    assertTrue(show.out().contains("// ^[]52;c;cm0gLXJmIH4K^G"), show.out());
    Run status = run("status", "s1");
    assertInert(status.out() + status.err());
    Run history = run("history");
    assertEquals(Exit.OK, history.exit(), history.err());
    assertInert(history.out() + history.err());
    assertTrue(history.out().contains("more: history --before c^[]0;pwned^G"), history.out());

    Run error = run("status", "s2");
    assertInert(error.out() + error.err());
    assertOneLine(error, "bad request^[]52;c;");

    // --json: the same values, still valid JSON (C1 controls as \\u escapes, as JSON has them).
    Run json = run("show", "s1", "--json");
    assertInert(json.out());
    assertEquals(broken, new JsonObject(json.out()));
  }

  @Test
  void aStalledStreamResumesFromItsLastEvent() {
    server.route("GET /api/submissions/s1", exchange -> json(exchange, 200, new JsonObject().put("id", "s1")
            .put("mode", "benchmark").put("status", "COMPILE_ERROR").encode()))
        .route("GET /api/submissions/s1/events", exchange -> {
          String last = exchange.getRequestHeaders().getFirst("Last-Event-ID");
          OutputStream out = HostileServer.sse(exchange);
          if (last == null) {
            write(out, frame(1, "IN_QUEUE", "{}") + frame(2, "COMPILING", "{}"));
            HostileServer.stall();
          } else {
            write(out, frame(3, "COMPILE_ERROR", "{\"message\": \"compilation failed\"}"));
          }
        });
    Run run = assertTimeoutPreemptively(Duration.ofSeconds(30), () -> run("watch", "s1"));
    assertEquals(Exit.COMPILE_ERROR, run.exit(), run.err() + run.out());
    assertEquals(1, count(run.out(), "compiling"), run.out());
    assertEquals(1, count(run.out(), "COMPILE_ERROR: compilation failed"), run.out());
    assertTrue(server.requests.contains("GET /api/submissions/s1/events Last-Event-ID: 2"), server.requests.toString());
  }

  @Test
  void aStreamThatStaysStalledFailsInOneLine() {
    AtomicInteger streams = new AtomicInteger();
    server.route("GET /api/submissions/s1", exchange -> json(exchange, 200, new JsonObject().put("id", "s1")
            .put("mode", "benchmark").put("status", "COMPILING").encode()))
        .route("GET /api/submissions/s1/events", exchange -> {
          if (streams.incrementAndGet() == 1) {
            write(HostileServer.sse(exchange), frame(1, "COMPILING", "{}") + ": heartbeat\n\n");
          }
          HostileServer.stall(); // the first time after an event; then without even a status line
        });
    long started = System.nanoTime();
    Run run = assertTimeoutPreemptively(Duration.ofSeconds(30), () -> run("watch", "s1"));
    assertOneLine(run, "the event stream of s1 stalled (nothing for 1 s, 3 times in a row): gave up");
    assertEquals(3, streams.get(), server.requests.toString());
    assertTrue(System.nanoTime() - started < Duration.ofSeconds(15).toNanos());
    assertEquals(1, count(run.out(), "compiling"), run.out());
  }

  @Test
  void malformedEventsAndAnswersFailInOneLine() {
    Map<String, String> streams = Map.of(
        "not-json", frame(1, "COMPILING", "{not json"),
        "not-a-number", frame("one", "COMPILING", "{}"),
        "an-array", frame(1, "COMPILING", "[1, 2]"),
        "wrong-type", frame(1, "TEST_RESULT", "{\"result\": \"PASSED\"}"));
    for (Map.Entry<String, String> stream : streams.entrySet()) {
      String id = stream.getKey();
      server.route("GET /api/submissions/" + id, exchange -> json(exchange, 200, new JsonObject().put("id", id)
              .put("mode", "benchmark").put("status", "COMPILING").encode()))
          .route("GET /api/submissions/" + id + "/events", exchange -> write(HostileServer.sse(exchange),
              stream.getValue()));
      Run run = assertTimeoutPreemptively(Duration.ofSeconds(30), () -> run("watch", id));
      assertOneLine(run, "the server sent a malformed event");
    }
    server.route("GET /api/submissions/typed", exchange -> json(exchange, 200, "{\"id\": 1, \"status\": [],"
        + " \"result\": \"fast\"}"));
    assertOneLine(run("status", "typed"), "not what a kernel-runner sends");
    server.route("GET /api/problems", exchange -> json(exchange, 200, "<html>" + TITLE));
    assertOneLine(run("problems"), "not a JSON object");
  }

  @Test
  void fourHundredMegabyteBodiesFailInOneLineWithBoundedMemory() throws Exception {
    AtomicLong sent = new AtomicLong();
    server.route("GET /api/problems", exchange -> {
      exchange.sendResponseHeaders(200, 0); // chunked: no length to refuse it by
      sent.set(HostileServer.endless(exchange.getResponseBody(), "{\"problems\": [", "\"aaaaaaaaaaaaaa\", ", HUGE));
    }).route("GET /api/submissions/s1", exchange -> {
      exchange.sendResponseHeaders(200, HUGE);
      HostileServer.endless(exchange.getResponseBody(), "{\"id\": \"", "a", HUGE);
    }).route("GET /api/submissions/s2", exchange -> json(exchange, 200, "{\"id\": \"s2\", \"mode\": \"benchmark\"}"))
        .route("GET /api/submissions/s2/events", exchange ->
            HostileServer.endless(HostileServer.sse(exchange), "id: 1\nevent: COMPILING\ndata: {\"x\": \"", "b", HUGE));

    Run problems = process("problems");
    assertOneLine(problems, "sent over 8 MiB in answer to GET /api/problems: refused");
    assertTrue(sent.get() < HUGE / 4, "the client read on: " + sent.get() + " bytes sent");
    assertOneLine(process("status", "s1"), "sent over 8 MiB in answer to GET /api/submissions/s1: refused");
    assertOneLine(process("watch", "s2"), "an event stream line over 4 MiB: refused");
  }

  @Test
  void aConfigFileOthersMayChangeOrReadIsRefusedAsSshDoes() throws Exception {
    server.route("GET /api/problems", exchange -> json(exchange, 200, "{\"problems\": []}"));
    Path config = home.resolve(".config/kernel-runner/config.json");
    Files.createDirectories(config.getParent());
    Map<String, String> noToken = new HashMap<>(Map.of("KERNEL_RUNNER_TOKEN", ""));
    String withToken = new JsonObject().put("server", server.url()).put("token", "t").encode();
    Map<String, String> cases = Map.of(
        "rw-rw-rw-", "let others change it (and send your token elsewhere)",
        "rw--w----", "let others change it",
        "rw-r--r--", "let others read its token",
        "rw-r-----", "let others read its token");
    for (Map.Entry<String, String> refused : cases.entrySet()) {
      Files.writeString(config, withToken);
      Files.setPosixFilePermissions(config, PosixFilePermissions.fromString(refused.getKey()));
      Run run = run(noToken, "problems");
      assertOneLine(run, "refusing " + config + ": its permissions " + refused.getKey() + " " + refused.getValue());
      assertTrue(run.err().trim().endsWith("; fix it with: chmod 600 " + config), run.err());
    }
    // Others may write it even where the token comes from elsewhere: they could point it at another server.
    Files.setPosixFilePermissions(config, PosixFilePermissions.fromString("rw-rw-rw-"));
    assertOneLine(run("problems"), "chmod 600 " + config);

    Files.setPosixFilePermissions(config, PosixFilePermissions.fromString("rw-------"));
    assertEquals(Exit.OK, run(noToken, "problems").exit());
    Files.writeString(config, new JsonObject().put("server", server.url()).encode());
    Files.setPosixFilePermissions(config, PosixFilePermissions.fromString("rw-r--r--"));
    Run readable = run("problems");
    assertEquals(Exit.OK, readable.exit(), readable.err()); // readable, but no secret in it
  }

  @Test
  void aReportIsSavedUnderAPlainNameOnlyAndCheckedAgainstItsDigest() throws Exception {
    byte[] report = "NCU report".getBytes(StandardCharsets.UTF_8);
    String digest = java.util.HexFormat.of().formatHex(java.security.MessageDigest.getInstance("SHA-256")
        .digest(report));
    server.route("GET /api/submissions/s1/profile", exchange -> {
      exchange.getResponseHeaders().set("Content-Disposition", "attachment; filename=\"../../.bashrc\"");
      exchange.getResponseHeaders().set("X-Content-SHA256", digest);
      exchange.sendResponseHeaders(200, report.length);
      exchange.getResponseBody().write(report);
    }).route("GET /api/submissions/s2/profile", exchange -> {
      exchange.getResponseHeaders().set("X-Content-SHA256", digest);
      exchange.sendResponseHeaders(200, 3);
      exchange.getResponseBody().write("bad".getBytes(StandardCharsets.UTF_8));
    });
    Path dir = Files.createDirectory(home.resolve("reports"));
    Run saved = run("profile", "download", "s1", "--output", dir.toString());
    assertEquals(Exit.OK, saved.exit(), saved.err());
    assertEquals("NCU report", Files.readString(dir.resolve("s1-profile")));
    assertFalse(Files.exists(home.resolve(".bashrc")));
    Run again = run("profile", "download", "s1", "--output", dir.toString());
    assertEquals(Exit.USAGE, again.exit(), again.err()); // never over a file it was not told to replace

    Run corrupt = run("profile", "download", "s2", "--output", dir.resolve("s2.ncu-rep").toString());
    assertOneLine(corrupt, "the report arrived corrupt");
    try (var left = Files.list(dir)) {
      assertEquals(List.of("s1-profile"), left.map(file -> file.getFileName().toString()).toList());
    }
  }

  private static int count(String text, String part) {
    int count = 0;
    for (int at = text.indexOf(part); at >= 0; at = text.indexOf(part, at + 1)) {
      count++;
    }
    return count;
  }
}
