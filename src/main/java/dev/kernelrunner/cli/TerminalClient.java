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
 * {@code java -jar kernel-runner.jar <command>}: submit, watch, status, show, history, cancel, profile download,
 * problems, leaderboard. Errors are one line; exit statuses are {@link Exit}'s. Whatever the server sends is
 * printed through {@link Screen}, its control characters made visible.
 */
public final class TerminalClient {
  public static final Set<String> COMMANDS = Set.of("submit", "watch", "status", "show", "history", "cancel",
      "profile", "problems", "leaderboard", "me", "baselines", "help");
  private static final Set<String> FLAGS = Set.of("--server", "--token", "--problem", "--gpu", "--dtype", "--language",
      "--mode", "--limit", "--before", "--output", "--level", "--tag", "--search");
  private static final String USAGE = """
      usage: java -jar kernel-runner.jar <command> [--server URL] [--token TOKEN]
        submit FILE --problem P --gpu G [--dtype D] [--language cuda|hip] [--mode benchmark|check|profile] [--json]
        watch ID [--json]       follow a submission to its end
        status ID [--json]      a submission as it stands
        show ID [--json]        the same with its code (and its error in full)
        history [--problem P] [--gpu G] [--limit N] [--before CURSOR] [--json]
                                your submissions, newest first, a page at a time
        cancel ID               ask the service to cancel it
        profile download ID [--output FILE|DIR]   a profile-mode submission's report
        problems [--level N] [--tag T] [--search TEXT] [--json]
                                the problems (slug, level, dtypes, title), filtered
        problems show SLUG [--language cuda|hip] [--dtype D] [--json]
                                one problem: what it computes, its solution(...) signature, how it is launched
        problems show SLUG --starter [--language cuda|hip] > kernel.cu
                                a starter kernel that compiles (and fails every test until written)
        leaderboard P --gpu G [--dtype D] [--json]
        me [--level N] [--json]  you: your quotas, and fast_0/1/2 per GPU type over the catalog (or a level)
        baselines [--gpu G] [--problem P] [--json]
                                PyTorch's current times (eager, torch.compile), on each problem's largest test
        baselines measure --gpu G [SLUG ...] [--level N] [--dtype D] [--json]
                                (admin) measure them anew: a baseline job per problem (all by default), queued
      The server and token come from --server/--token, else KERNEL_RUNNER_SERVER/KERNEL_RUNNER_TOKEN, else
      ~/.config/kernel-runner/config.json {"server": ..., "token": ...} (refused unless only you may read it:
      chmod 600). A stream quiet for KERNEL_RUNNER_READ_TIMEOUT_SECONDS (40) is resumed, 3 times at most.
      Exit status: 0 success, 2 compile error, 3 wrong answer, 4 runtime error or time limit, 5 other errors or
      cancelled, 64 a command line not understood.""";

  private final Screen out;
  private final Screen err;
  private final Map<String, String> env;

  public TerminalClient(PrintStream out, PrintStream err, Map<String, String> env) {
    this.out = new Screen(out);
    this.err = new Screen(err);
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
        case "status" -> status(api, command.argument("submission id"), command.json(), false);
        case "show" -> status(api, command.argument("submission id"), command.json(), true);
        case "history" -> history(api, command);
        case "cancel" -> cancel(api, command.argument("submission id"));
        case "profile" -> profileDownload(api, command);
        case "problems" -> problems(api, command);
        case "me" -> me(api, command);
        case "baselines" -> baselines(api, command);
        default -> leaderboard(api, command);
      };
    } catch (CliError e) {
      err.println("kernel-runner: " + e.getMessage());
      return e.exitCode();
    } catch (RuntimeException e) {
      // A field of another JSON type than the service's: a server this client does not understand.
      err.println("kernel-runner: the server's answer is not what a kernel-runner sends: " + CliError.unexpected(e));
      return Exit.OTHER;
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
        } else if (arg.equals("--starter")) {
          flags.put(arg, "true");
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

    /** The flag as a whole number from {@code min} to {@code max}, or {@code fallback} when not given. */
    int number(String flag, int min, int max, int fallback) throws CliError {
      String value = flags.get(flag);
      if (value == null) {
        return fallback;
      }
      try {
        int number = Integer.parseInt(value);
        if (number >= min && number <= max) {
          return number;
        }
      } catch (NumberFormatException e) {
        // said below
      }
      throw new CliError(flag + " must be a whole number from " + min + " to " + max, Exit.USAGE);
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
          JsonObject answer = api.cancel(path(id));
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
    String ended = end == null ? submission.getString("status") : end.type();
    return Exit.of("VERIFIED".equals(ended) ? "BENCHMARKED" : ended);
  }

  /** A submission as it stands; {@code full}: with its error's details and its code. */
  private int status(ApiClient api, String id, boolean json, boolean full) throws CliError {
    JsonObject submission = api.get("/api/submissions/" + path(id) + (full ? "?include=code" : ""));
    if (json) {
      out.println(submission.encodePrettily());
      return Exit.OK;
    }
    out.println(id + ": " + submission.getString("status") + " (" + submission.getString("problem") + ", "
        + submission.getString("gpu_type") + ", " + submission.getString("dtype") + ", "
        + submission.getString("language") + ", " + submission.getString("mode") + ")");
    if (full) {
      out.println("created " + submission.getString("created_at") + (submission.getString("finished_at") == null
          ? "" : ", finished " + submission.getString("finished_at")));
      JsonObject error = submission.getJsonObject("error");
      if (error != null) {
        out.println(error.getString("type", "error") + ": " + error.getString("message", ""));
        if (error.getValue("details") instanceof String details) {
          details.lines().limit(200).forEach(line -> out.println("  " + line));
        }
      }
    }
    JsonArray profiles = submission.getJsonArray("profile_results", new JsonArray());
    if (!profiles.isEmpty()) {
      out.println("profile (ms)");
      profiles.forEach(item -> profile((JsonObject) item));
    }
    results(submission);
    if (full) {
      out.println("---- code (" + submission.getString("language") + ")");
      out.println(submission.getString("code", "(the service sent no code)"));
    }
    return Exit.OK;
  }

  /** A page of the caller's submissions, newest first, and how to get the next one. */
  private int history(ApiClient api, Command command) throws CliError {
    StringBuilder query = new StringBuilder("?limit=" + command.number("--limit", 1, 200, 20));
    for (String[] filter : new String[][] {{"--problem", "problem"}, {"--gpu", "gpu_type"}, {"--before", "before"}}) {
      if (command.flag(filter[0]) != null) {
        query.append('&').append(filter[1]).append('=').append(URLEncoder.encode(command.flag(filter[0]),
            StandardCharsets.UTF_8));
      }
    }
    JsonObject page = api.get("/api/submissions" + query);
    if (command.json()) {
      out.println(page.encodePrettily());
      return Exit.OK;
    }
    JsonArray submissions = page.getJsonArray("submissions", new JsonArray());
    if (submissions.isEmpty()) {
      out.println(command.flag("--before") == null ? "no submissions yet" : "no more submissions");
      return Exit.OK;
    }
    String row = "%-36s  %-19s  %-20s %-10s %-8s %-9s %-19s %12s%n";
    out.printf(row, "id", "created", "problem", "gpu", "dtype", "mode", "status", "geomean (ms)");
    for (Object item : submissions) {
      JsonObject submission = (JsonObject) item;
      JsonObject result = submission.getJsonObject("result");
      String created = submission.getString("created_at", "");
      out.printf(row, submission.getString("id"), created.length() > 19 ? created.substring(0, 19) : created,
          submission.getString("problem"), submission.getString("gpu_type"), submission.getString("dtype"),
          submission.getString("mode"), submission.getString("status"),
          number(result == null ? null : result.getDouble("geomean_runtime_ms")));
    }
    String next = page.getString("next_before");
    if (next != null) {
      out.println("more: history --before " + next + (command.flag("--limit") == null ? ""
          : " --limit " + command.flag("--limit")));
    }
    return Exit.OK;
  }

  private int cancel(ApiClient api, String id) throws CliError {
    JsonObject answer = api.cancel(path(id));
    out.println(id + ": " + answer.getString("status"));
    return Exit.OK;
  }

  /** {@code profile download ID [--output FILE|DIR]}: the report, saved under the server's name unless told. */
  private int profileDownload(ApiClient api, Command command) throws CliError {
    if (command.arguments().size() != 2 || !command.arguments().get(0).equals("download")) {
      throw new CliError("usage: profile download ID [--output FILE]", Exit.USAGE);
    }
    String id = path(command.arguments().get(1));
    String output = command.flag("--output");
    ApiClient.Download saved = api.download("/api/submissions/" + id + "/profile", suggested -> {
      if (output != null && !Files.isDirectory(Path.of(output))) {
        return Path.of(output);
      }
      // The server's name only when it is a plain file name (never a path or a hidden file), and never over a file.
      String name = suggested != null && suggested.matches("[A-Za-z0-9][A-Za-z0-9._-]{0,127}") ? suggested
          : id + "-profile";
      Path file = output == null ? Path.of(name) : Path.of(output, name);
      if (Files.exists(file)) {
        throw new CliError(file + " exists: pass --output FILE to replace it or name another", Exit.USAGE);
      }
      return file;
    });
    out.println("saved " + saved.file() + " (" + saved.size() + " bytes, SHA-256 " + saved.sha256() + ")");
    return Exit.OK;
  }

  private int problems(ApiClient api, Command command) throws CliError {
    if (!command.arguments().isEmpty()) {
      if (command.arguments().size() != 2 || !command.arguments().get(0).equals("show")) {
        throw new CliError("problems takes no argument, or show SLUG", Exit.USAGE);
      }
      return problem(api, command, command.arguments().get(1));
    }
    JsonObject answer = api.get("/api/problems" + query(command, "--level", "level", "--tag", "tag", "--search", "q"));
    if (command.json()) {
      out.println(answer.encodePrettily());
      return Exit.OK;
    }
    JsonArray problems = answer.getJsonArray("problems", new JsonArray());
    for (Object item : problems) {
      JsonObject problem = (JsonObject) item;
      Object level = problem.getValue("level");
      out.printf("%-30s %-3s %-24s %s%n", problem.getString("slug"), level == null ? "" : "L" + level,
          String.join(",", strings(problem.getJsonArray("dtypes"))), problem.getString("title", ""));
    }
    if (problems.isEmpty()) {
      out.println("no problem matches");
    }
    return Exit.OK;
  }

  /** One fast_p table: its shares per GPU type. */
  private void shares(JsonObject fast) {
    JsonObject types = fast.getJsonObject("gpu_types", new JsonObject());
    if (types.isEmpty()) {
      out.println("  no accepted result yet");
    }
    for (String type : types.fieldNames()) {
      JsonObject f = types.getJsonObject(type);
      out.printf("  %-10s solved %d of %d   fast_0 %.3f   fast_1 %.3f   fast_2 %.3f%n", type,
          f.getInteger("solved"), f.getInteger("problems"), f.getDouble("fast_0"), f.getDouble("fast_1"),
          f.getDouble("fast_2"));
    }
  }

  /** The caller: quotas, and fast_p per GPU type (KernelBench's: the share of problems solved over 0, 1, 2x). */
  /** The current baselines, or (an admin's) {@code measure}: baseline jobs queued through the service. */
  private int baselines(ApiClient api, Command command) throws CliError {
    List<String> arguments = command.arguments();
    if (!arguments.isEmpty() && arguments.get(0).equals("measure")) {
      JsonObject request = new JsonObject().put("gpu_type", command.required("--gpu"));
      if (arguments.size() > 1) {
        request.put("problems", new JsonArray(new ArrayList<Object>(arguments.subList(1, arguments.size()))));
      }
      if (command.flag("--level") != null) {
        try {
          request.put("level", Integer.parseInt(command.flag("--level")));
        } catch (NumberFormatException e) {
          throw new CliError("--level takes a whole number", Exit.USAGE);
        }
      }
      if (command.flag("--dtype") != null) {
        request.put("dtypes", new JsonArray().add(command.flag("--dtype")));
      }
      JsonObject queued = api.post("/api/admin/baselines", request);
      if (command.json()) {
        out.println(queued.encodePrettily());
        return Exit.OK;
      }
      JsonArray jobs = queued.getJsonArray("jobs", new JsonArray());
      out.println(jobs.size() + " baseline jobs queued on " + queued.getString("gpu_type", "")
          + " (watch ID follows one)");
      for (Object item : jobs) {
        JsonObject job = (JsonObject) item;
        out.printf("%s %-30s %s%n", job.getString("id"), job.getString("problem"), job.getString("dtype"));
      }
      return Exit.OK;
    }
    if (!arguments.isEmpty()) {
      throw new CliError("baselines takes no argument, or measure [SLUG ...]", Exit.USAGE);
    }
    JsonObject answer = api.get("/api/baselines" + query(command, "--gpu", "gpu_type", "--problem", "problem"));
    if (command.json()) {
      out.println(answer.encodePrettily());
      return Exit.OK;
    }
    JsonArray baselines = answer.getJsonArray("baselines", new JsonArray());
    for (Object item : baselines) {
      JsonObject baseline = (JsonObject) item;
      JsonObject tests = baseline.getJsonObject("tests", new JsonObject());
      String last = null;
      for (String name : tests.fieldNames()) {
        last = name; // in the order measured: the largest test last
      }
      Object median = last == null ? null : tests.getJsonObject(last).getValue("median");
      out.printf("%-8s %-30s %-9s %-14s %s ms (%s) %s, %s%n", baseline.getString("gpu_type"),
          baseline.getString("problem"), baseline.getString("dtype"), baseline.getString("method"),
          median instanceof Number n ? number(n.doubleValue()) : "?", last, baseline.getString("source"),
          baseline.getString("measured_at"));
    }
    if (baselines.isEmpty()) {
      out.println("no baselines stored");
    }
    return Exit.OK;
  }

  /** The query string ("?a=b&...", or "") of the flags given, each {@code flag, parameter} in turn. */
  private static String query(Command command, String... flagsAndParameters) {
    List<String> query = new ArrayList<>();
    for (int i = 0; i < flagsAndParameters.length; i += 2) {
      String value = command.flag(flagsAndParameters[i]);
      if (value != null) {
        query.add(flagsAndParameters[i + 1] + "=" + URLEncoder.encode(value, StandardCharsets.UTF_8));
      }
    }
    return query.isEmpty() ? "" : "?" + String.join("&", query);
  }

  /** A baseline job's test: eager's and torch.compile's medians; nothing for a submission's. */
  private static String baselineFigures(JsonObject result) {
    StringBuilder figures = new StringBuilder();
    for (String method : List.of("eager", "torch_compile")) {
      if (result.getValue(method) instanceof JsonObject f && f.getValue("median") instanceof Number n) {
        figures.append(figures.isEmpty() ? ": " : ", ").append(method).append(" ").append(number(n.doubleValue()))
            .append(" ms");
      }
    }
    return figures.toString();
  }

  private int me(ApiClient api, Command command) throws CliError {
    String level = command.flag("--level");
    JsonObject me = api.get("/api/me" + (level == null ? "" : "?level=" + URLEncoder.encode(level,
        StandardCharsets.UTF_8)));
    if (command.json()) {
      out.println(me.encodePrettily());
      return Exit.OK;
    }
    out.println(me.getString("user_id") + (me.getBoolean("admin", false) ? " (admin)" : ""));
    JsonObject quotas = me.getJsonObject("quotas", new JsonObject());
    for (String name : quotas.fieldNames()) {
      JsonObject quota = quotas.getJsonObject(name);
      Object limit = quota.getValue("limit");
      out.println("  " + name + ": " + quota.getValue("used") + " of " + (limit == null ? "no limit" : limit));
    }
    JsonObject fast = me.getJsonObject("fast_p", new JsonObject());
    out.println("fast_p over " + (fast.getValue("level") == null ? "the catalog" : "level " + fast.getValue("level"))
        + " (baseline: " + fast.getString("baseline", "") + ")");
    shares(fast);
    JsonObject stored = fast.getJsonObject("baselines", new JsonObject());
    for (String method : stored.fieldNames()) {
      out.println("  over the stored " + method + " baseline:");
      shares(stored.getJsonObject(method));
    }
    return Exit.OK;
  }

  /** One problem: what it computes and the solution(...) to write, or (--starter) a kernel to begin from. */
  private int problem(ApiClient api, Command command, String slug) throws CliError {
    JsonObject problem = api.get("/api/problems/" + path(slug));
    if (command.json()) {
      out.println(problem.encodePrettily());
      return Exit.OK;
    }
    String language = command.flag("--language") == null ? "cuda" : command.flag("--language");
    JsonObject byDtype = problem.getJsonObject("signatures", new JsonObject()).getJsonObject(language);
    if (byDtype == null) {
      throw new CliError(slug + " takes no " + language + " (its languages: "
          + String.join(", ", strings(problem.getJsonArray("languages"))) + ")", Exit.USAGE);
    }
    if (command.flag("--starter") != null) {
      out.print(problem.getJsonObject("starter", new JsonObject()).getString(language, ""));
      return Exit.OK;
    }
    String dtype = command.flag("--dtype") == null ? strings(problem.getJsonArray("dtypes")).get(0)
        : command.flag("--dtype");
    JsonObject signature = byDtype.getJsonObject(dtype);
    if (signature == null) {
      throw new CliError(slug + " takes no dtype " + dtype + " (its dtypes: "
          + String.join(", ", strings(problem.getJsonArray("dtypes"))) + ")", Exit.USAGE);
    }
    out.println(problem.getString("title", slug) + " (" + slug + (problem.getValue("level") == null ? ""
        : ", level " + problem.getValue("level")) + ")");
    out.println(problem.getString("description", ""));
    out.println("dtypes: " + String.join(", ", strings(problem.getJsonArray("dtypes"))) + "; languages: "
        + String.join(", ", strings(problem.getJsonArray("languages"))));
    out.println();
    out.println("Write either kernel the agent launches (" + problem.getString("launch_note", "") + "):");
    for (String include : strings(signature.getJsonArray("includes", new JsonArray()))) {
      out.println("  #include " + include);
    }
    out.println("  " + signature.getString("kernel"));
    out.println("or a host function that launches your own kernels:");
    out.println("  " + signature.getString("host"));
    JsonObject source = problem.getJsonObject("attribution");
    if (source != null) {
      out.println();
      out.println("From " + source.getString("source", "") + " (" + source.getString("license", "") + ")");
    }
    out.println();
    out.println("Start from: kernel-runner problems show " + slug + " --starter --language " + language
        + " > kernel." + ("hip".equals(language) ? "hip" : "cu"));
    return Exit.OK;
  }

  private int leaderboard(ApiClient api, Command command) throws CliError {
    String problem = command.argument("problem");
    String query = "?gpu_type=" + URLEncoder.encode(command.required("--gpu"), StandardCharsets.UTF_8)
        + (command.flag("--dtype") == null ? ""
            : "&dtype=" + URLEncoder.encode(command.flag("--dtype"), StandardCharsets.UTF_8));
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
        out.println("  " + ("PASSED".equals(result.getString("status")) ? "✓" : "✗") + " "
            + result.getValue("test_id") + " " + result.getString("name", ""));
      }
      case "CHECKED" -> out.println("checked: " + data.getValue("passed_tests", "?") + "/"
          + data.getValue("total_tests", "?") + " passed");
      case "BENCHMARKING" -> out.println("benchmarking " + data.getValue("total_tests", "") + " tests");
      case "PROFILING" -> out.println("profiling" + (data.getValue("tool") == null ? ""
          : " with " + data.getValue("tool")));
      case "BENCHMARK_RESULT" -> {
        JsonObject result = data.getJsonObject("result", new JsonObject());
        out.println("  ✓ " + result.getValue("test_id") + " " + result.getString("name", "")
            + (result.getValue("runtime_ms") instanceof Number n ? ": " + number(n.doubleValue()) + " ms" : "")
            + baselineFigures(result));
      }
      case "BASELINED" -> out.println("baselines measured: " + data.getString("problem", "") + " "
          + data.getString("dtype", "") + " on " + data.getJsonObject("hardware", new JsonObject())
          .getString("hardware", "?"));
      case "PROFILE_RESULT" -> profile(data.getJsonObject("result", new JsonObject()));
      case "BENCHMARKED" -> out.println("benchmarked" + timingBy(timing(data)) + (EventType.timingPending(data)
          ? "; the profiler is auditing its times" + (timing(data).getValue("audit_reason") instanceof String why
              ? " (" + why + ")" : "") : ""));
      case "VERIFIED" -> out.println("times " + data.getJsonObject("timing", new JsonObject()).getString("status", "?")
          + timingBy(data.getJsonObject("timing")));
      case "PROFILED" -> {
        JsonObject report = data.getJsonObject("report");
        out.println("profiled" + (data.getValue("tool") == null ? ""
            : " with " + data.getValue("tool") + " " + data.getValue("tool_version", "")));
        if (report != null && report.getBoolean("stored", false)) {
          out.println("report " + report.getValue("name") + " (" + report.getValue("size")
              + " bytes): profile download " + data.getValue("submission_id"));
        } else if (report != null) {
          out.println("report not kept" + (report.getValue("reason") == null ? "" : ": " + report.getValue("reason")));
        }
      }
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

  /** A test's profile: its time, then each kernel's figures and the profiler's hint. */
  private void profile(JsonObject result) {
    out.println("  ✓ " + result.getValue("test_id") + " " + result.getString("name", "")
        + (result.getValue("duration_ms") instanceof Number n ? ": " + number(n.doubleValue()) + " ms" : ""));
    for (Object item : result.getJsonArray("kernels", new JsonArray())) {
      JsonObject kernel = (JsonObject) item;
      out.println("      " + kernel.getValue("kernel") + ": " + number(kernel.getDouble("duration_ms")) + " ms, DRAM "
          + number(kernel.getDouble("dram_gbs")) + " GB/s (" + number(kernel.getDouble("dram_pct_of_peak"))
          + "% of peak), SM " + number(kernel.getDouble("sm_pct_of_peak")) + "% of peak, occupancy "
          + number(kernel.getDouble("achieved_occupancy_pct")) + "%, " + kernel.getValue("registers_per_thread", "?")
          + " registers/thread, grid " + kernel.getValue("grid_size", "?") + ", block "
          + kernel.getValue("block_size", "?"));
      if (kernel.getValue("hint") != null) {
        out.println("        hint: " + kernel.getValue("hint"));
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
      JsonObject baselines = result.getJsonObject("baseline_speedups", new JsonObject());
      List<String> over = new ArrayList<>();
      for (String method : baselines.fieldNames()) {
        if (baselines.getValue(method) instanceof Number speedup) {
          over.add(String.format(Locale.ROOT, "%.2fx over PyTorch %s", speedup.doubleValue(),
              method.equals("torch_compile") ? "torch.compile" : method));
        }
      }
      if (!over.isEmpty()) {
        out.println(String.join(", ", over) + " (its GPU type's baselines, geometric mean over the tests)");
      }
    }
    JsonObject invalidated = submission.getJsonObject("invalidated");
    if (invalidated != null) {
      out.println("taken off the leaderboards by " + invalidated.getString("by") + ": "
          + invalidated.getString("reason"));
    }
    out.println(submission.getString("status"));
  }

  private static JsonObject timing(JsonObject data) {
    return data.getJsonObject("verification", new JsonObject()).getJsonObject("timing");
  }

  /**
   * How the times were made: {@code replayed} out of the submission's reach, else (its own process's, or a replay
   * timed while the GPU was not quiet) not ranked, and why.
   */
  private static String timingBy(JsonObject timing) {
    if (timing == null || timing.getString("method") == null) {
      return "";
    }
    String method = timing.getString("method");
    return " (" + ("unranked".equals(timing.getString("status")) || !"replayed".equals(method)
        ? method + ", not ranked: " + timing.getString("reason", "?")
        : "times replayed out of the submission's reach") + ")";
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
