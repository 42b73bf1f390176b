package dev.kernelrunner.cli;

import dev.kernelrunner.model.EventType;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.io.IOException;
import java.io.PrintStream;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * {@code java -jar kernel-runner.jar <command>}: submit, watch, status, cancel, problems, leaderboard. Errors are
 * one line; exit statuses are {@link Exit}'s.
 */
public final class TerminalClient {
  public static final Set<String> COMMANDS = Set.of("submit", "watch", "status", "cancel", "problems", "leaderboard",
      "help");
  private static final Set<String> FLAGS = Set.of("--server", "--token", "--problem", "--gpu", "--dtype", "--language",
      "--mode");
  private static final String USAGE = """
      usage: java -jar kernel-runner.jar <command> [--server URL] [--token TOKEN]
        submit FILE --problem P --gpu G [--dtype D] [--language cuda|hip] [--mode benchmark|check|profile] [--json]
        watch ID [--json]       follow a submission to its end
        status ID [--json]      a submission as it stands
        cancel ID               ask the service to cancel it
        problems                the problems and their dtypes
        leaderboard P --gpu G [--dtype D] [--json]
      The server and token come from --server/--token, else KERNEL_RUNNER_SERVER/KERNEL_RUNNER_TOKEN, else
      ~/.config/kernel-runner/config.json {"server": ..., "token": ...}. Exit status: 0 success, 2 compile error,
      3 wrong answer, 4 runtime error or time limit, 5 other errors or cancelled, 64 a command line not understood.""";

  private final PrintStream out;
  private final PrintStream err;
  private final Map<String, String> env;

  public TerminalClient(PrintStream out, PrintStream err, Map<String, String> env) {
    this.out = out;
    this.err = err;
    this.env = env;
  }

  /** Runs one command; returns the exit status. */
  public int run(String... args) {
    try {
      Command command = Command.parse(args);
      if (command.name().equals("help")) {
        out.println(USAGE);
        return Exit.OK;
      }
      ClientSettings settings = ClientSettings.resolve(command.flag("--server"), command.flag("--token"), env);
      ApiClient api = new ApiClient(settings);
      return switch (command.name()) {
        case "submit" -> submit(api, command);
        case "watch" -> watch(api, command.argument("submission id"), command.json());
        case "status" -> status(api, command.argument("submission id"), command.json());
        case "cancel" -> cancel(api, command.argument("submission id"));
        case "problems" -> problems(api);
        default -> leaderboard(api, command);
      };
    } catch (CliError e) {
      err.println("kernel-runner: " + e.getMessage());
      return e.exitCode();
    }
  }

  /** A parsed command line: the command, its one argument, its flags. */
  record Command(String name, List<String> arguments, Map<String, String> flags, boolean json) {
    static Command parse(String[] args) throws CliError {
      if (args.length == 0 || !COMMANDS.contains(args[0])) {
        throw new CliError((args.length == 0 ? "no command" : "unknown command '" + args[0] + "'") + "\n" + USAGE,
            Exit.USAGE);
      }
      List<String> arguments = new ArrayList<>();
      Map<String, String> flags = new HashMap<>();
      boolean json = false;
      for (int i = 1; i < args.length; i++) {
        String arg = args[i];
        if (arg.equals("--json")) {
          json = true;
        } else if (FLAGS.contains(arg)) {
          if (i + 1 >= args.length) {
            throw new CliError(arg + " needs a value", Exit.USAGE);
          }
          flags.put(arg, args[++i]);
        } else if (arg.startsWith("--")) {
          throw new CliError("unknown option " + arg + "\n" + USAGE, Exit.USAGE);
        } else {
          arguments.add(arg);
        }
      }
      return new Command(args[0], arguments, flags, json);
    }

    String flag(String name) {
      return flags.get(name);
    }

    String required(String name) throws CliError {
      String value = flags.get(name);
      if (value == null) {
        throw new CliError(this.name + " needs " + name, Exit.USAGE);
      }
      return value;
    }

    String argument(String what) throws CliError {
      if (arguments.size() != 1) {
        throw new CliError(name + " takes one " + what, Exit.USAGE);
      }
      return arguments.get(0);
    }
  }

  // ---- commands

  private int submit(ApiClient api, Command command) throws CliError {
    Path file = Path.of(command.argument("source file"));
    String code;
    try {
      code = Files.readString(file);
    } catch (IOException e) {
      throw new CliError("cannot read " + file + ": " + e.getMessage(), Exit.USAGE);
    }
    String language = command.flag("--language");
    if (language == null) {
      String name = file.getFileName().toString().toLowerCase(Locale.ROOT);
      language = name.endsWith(".cu") ? "cuda" : name.endsWith(".hip") ? "hip" : null;
      if (language == null) {
        throw new CliError("cannot tell the language from '" + file.getFileName() + "': pass --language cuda|hip",
            Exit.USAGE);
      }
    }
    String mode = command.flag("--mode") == null ? "benchmark" : command.flag("--mode");
    JsonObject request = new JsonObject().put("problem", command.required("--problem"))
        .put("gpu_type", command.required("--gpu")).put("language", language).put("mode", mode).put("code", code);
    if (command.flag("--dtype") != null) {
      request.put("dtype", command.flag("--dtype"));
    }
    JsonObject created = api.post("/api/submissions", request);
    String id = created.getString("id");
    if (!command.json()) {
      out.println("submitted " + id);
    }
    // Ctrl-C while it runs asks the service to cancel it, then exits with the cancelled status.
    boolean[] ended = {false};
    Thread cancelOnInterrupt = new Thread(() -> {
      if (!ended[0]) {
        try {
          JsonObject answer = api.post("/api/submissions/" + id + "/cancel", new JsonObject());
          err.println("kernel-runner: cancelled " + id + " (" + answer.getString("status") + ")");
        } catch (CliError e) {
          err.println("kernel-runner: could not cancel " + id + ": " + e.getMessage());
        }
        err.flush();
        Runtime.getRuntime().halt(Exit.OTHER);
      }
    });
    Runtime.getRuntime().addShutdownHook(cancelOnInterrupt);
    try {
      return follow(api, id, mode, command.json());
    } finally {
      ended[0] = true;
      try {
        Runtime.getRuntime().removeShutdownHook(cancelOnInterrupt);
      } catch (IllegalStateException shuttingDown) {
        // the hook is running or has run
      }
    }
  }

  private int watch(ApiClient api, String id, boolean json) throws CliError {
    JsonObject submission = api.get("/api/submissions/" + path(id));
    return follow(api, id, submission.getString("mode"), json);
  }

  private int follow(ApiClient api, String id, String mode, boolean json) throws CliError {
    EventFollower.Event end = new EventFollower(api, path(id), mode).follow(json ? event -> { } : this::show);
    JsonObject submission = api.get("/api/submissions/" + path(id));
    if (json) {
      out.println(submission.encodePrettily());
    } else {
      results(submission);
    }
    return Exit.of(end.type().equals("VERIFIED") ? "BENCHMARKED" : end.type());
  }

  private int status(ApiClient api, String id, boolean json) throws CliError {
    JsonObject submission = api.get("/api/submissions/" + path(id));
    if (json) {
      out.println(submission.encodePrettily());
    } else {
      out.println(id + ": " + submission.getString("status") + " (" + submission.getString("problem") + ", "
          + submission.getString("gpu_type") + ", " + submission.getString("dtype") + ", " + submission.getString("mode")
          + ")");
      results(submission);
    }
    return Exit.OK;
  }

  private int cancel(ApiClient api, String id) throws CliError {
    JsonObject answer = api.post("/api/submissions/" + path(id) + "/cancel", new JsonObject());
    out.println(id + ": " + answer.getString("status"));
    return Exit.OK;
  }

  private int problems(ApiClient api) throws CliError {
    JsonArray problems = api.get("/api/problems").getJsonArray("problems", new JsonArray());
    for (Object item : problems) {
      JsonObject problem = (JsonObject) item;
      out.printf("%-24s %-28s %s%n", problem.getString("slug"), String.join(",", strings(problem.getJsonArray("dtypes"))),
          problem.getString("title", ""));
    }
    return Exit.OK;
  }

  private int leaderboard(ApiClient api, Command command) throws CliError {
    String problem = command.argument("problem");
    String query = "?gpu_type=" + URLEncoder.encode(command.required("--gpu"), StandardCharsets.UTF_8)
        + (command.flag("--dtype") == null ? "" : "&dtype=" + URLEncoder.encode(command.flag("--dtype"), StandardCharsets.UTF_8));
    JsonObject board = api.get("/api/leaderboards/" + path(problem) + query);
    if (command.json()) {
      out.println(board.encodePrettily());
      return Exit.OK;
    }
    out.println(problem + " on " + board.getString("gpu_type") + " (" + board.getString("dtype") + ")");
    JsonArray entries = board.getJsonArray("entries", new JsonArray());
    if (entries.isEmpty()) {
      out.println("no accepted results yet");
      return Exit.OK;
    }
    out.printf("%-5s %-20s %14s  %-25s %9s  %s%n", "rank", "user", "geomean (ms)", "95% interval (ms)", "speedup",
        "submission");
    for (Object item : entries) {
      JsonObject entry = (JsonObject) item;
      JsonObject interval = entry.getJsonObject("interval_ms");
      Double speedup = entry.getDouble("speedup");
      out.printf("%-5s %-20s %14s  %-25s %9s  %s%n", entry.getInteger("rank") + (entry.getBoolean("tie") ? "=" : ""),
          entry.getString("user_id"), number(entry.getDouble("geomean_runtime_ms")),
          number(interval.getDouble("low")) + " - " + number(interval.getDouble("high")),
          speedup == null ? "-" : String.format(Locale.ROOT, "%.2fx", speedup), entry.getString("submission_id"));
    }
    out.println("= a tie: its interval overlaps the one ranked above it");
    return Exit.OK;
  }

  // ---- output

  /** A line per phase, a tick per test, the queue position while waiting. */
  private void show(EventFollower.Event event) {
    JsonObject data = event.data();
    switch (event.type()) {
      case "IN_QUEUE" -> out.println("queued" + (data.getValue("position") == null ? ""
          : " (position " + data.getValue("position") + ")"));
      case "PROVISIONING" -> out.println("provisioning" + (data.getString("message") == null ? ""
          : ": " + data.getString("message")));
      case "COMPILING" -> out.println("compiling");
      case "CHECKING" -> out.println("checking " + data.getValue("total_tests", "") + " tests");
      case "TEST_RESULT" -> {
        JsonObject result = data.getJsonObject("result", new JsonObject());
        out.println("  " + ("PASSED".equals(result.getString("status")) ? "✓" : "✗") + " " + result.getValue("test_id")
            + " " + result.getString("name", ""));
      }
      case "CHECKED" -> out.println("checked: " + data.getValue("passed_tests", "?") + "/" + data.getValue("total_tests", "?")
          + " passed");
      case "BENCHMARKING" -> out.println("benchmarking " + data.getValue("total_tests", "") + " tests");
      case "PROFILING" -> out.println("profiling");
      case "BENCHMARK_RESULT", "PROFILE_RESULT" -> {
        JsonObject result = data.getJsonObject("result", new JsonObject());
        out.println("  ✓ " + result.getValue("test_id") + " " + result.getString("name", "")
            + (result.getValue("runtime_ms") instanceof Number n ? ": " + number(n.doubleValue()) + " ms" : ""));
      }
      case "BENCHMARKED" -> out.println("benchmarked" + timingBy(timing(data)) + (EventType.timingPending(data)
          ? "; the profiler is auditing its times" : ""));
      case "VERIFIED" -> out.println("times " + data.getJsonObject("timing", new JsonObject()).getString("status", "?")
          + timingBy(data.getJsonObject("timing")));
      case "PROFILED" -> out.println("profiled");
      default -> {
        out.println(event.type() + ": " + data.getString("message", ""));
        // A compiler's output (its first 40 lines) or what the first mismatch was.
        Object details = data.getValue("details");
        if (details instanceof String text) {
          text.lines().limit(40).forEach(line -> out.println("  " + line));
        } else if (data.getValue("debug_info") instanceof JsonObject debug) {
          out.println("  " + debug.encode());
        }
      }
    }
  }

  /** The results table of a finished submission. */
  private void results(JsonObject submission) {
    JsonObject result = submission.getJsonObject("result");
    JsonArray tests = result == null ? null : result.getJsonArray("test_results");
    if (tests != null && !tests.isEmpty() && tests.getJsonObject(0).getValue("runtime_ms") != null) {
      out.printf("%-20s %14s %12s %14s %9s%n", "test", "runtime (ms)", "GFLOPS", "reference (ms)", "speedup");
      for (Object item : tests) {
        JsonObject test = (JsonObject) item;
        Double speedup = test.getDouble("speedup");
        out.printf("%-20s %14s %12s %14s %9s%n", test.getString("name", String.valueOf(test.getValue("test_id"))),
            number(test.getDouble("runtime_ms")), number(test.getDouble("gflops")),
            number(test.getDouble("reference_runtime_ms")),
            speedup == null ? "-" : String.format(Locale.ROOT, "%.2fx", speedup));
      }
      if (result.getValue("geomean_runtime_ms") instanceof Number geomean) {
        out.println("geometric mean " + number(geomean.doubleValue()) + " ms");
      }
    }
    JsonObject invalidated = submission.getJsonObject("invalidated");
    if (invalidated != null) {
      out.println("taken off the leaderboards by " + invalidated.getString("by") + ": " + invalidated.getString("reason"));
    }
    out.println(submission.getString("status"));
  }

  private static JsonObject timing(JsonObject data) {
    return data.getJsonObject("verification", new JsonObject()).getJsonObject("timing");
  }

  /** How the times were made ({@code replayed}: out of the submission's reach, or its own process's: unranked). */
  private static String timingBy(JsonObject timing) {
    if (timing == null || timing.getString("method") == null) {
      return "";
    }
    String method = timing.getString("method");
    return " (" + ("replayed".equals(method) ? "times replayed out of the submission's reach"
        : method + ", not ranked: " + timing.getString("reason", "?")) + ")";
  }

  private static String number(Double value) {
    if (value == null) {
      return "-";
    }
    return Math.abs(value) >= 0.001 || value == 0 ? String.format(Locale.ROOT, "%.4g", value)
        : String.format(Locale.ROOT, "%.3e", value);
  }

  private static List<String> strings(JsonArray array) {
    List<String> strings = new ArrayList<>();
    if (array != null) {
      array.forEach(item -> strings.add(String.valueOf(item)));
    }
    return strings;
  }

  /** A path segment as given: ids and problem names are plain, anything else would not name a resource. */
  private static String path(String segment) throws CliError {
    if (!segment.matches("[A-Za-z0-9._-]{1,128}")) {
      throw new CliError("'" + segment + "' is not a submission id or problem name", Exit.USAGE);
    }
    return segment;
  }
}
