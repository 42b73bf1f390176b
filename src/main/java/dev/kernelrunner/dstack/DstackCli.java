package dev.kernelrunner.dstack;

import dev.kernelrunner.dstack.DstackOutput.RunState;
import dev.kernelrunner.supervisor.CommandRunner;
import io.vertx.core.Future;
import io.vertx.core.json.DecodeException;
import io.vertx.core.json.JsonObject;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The dstack commands the runner uses, each a supervised child process with a timeout. JSON where the CLI
 * has it (0.20.3+), the {@code ps -a} table with a wide COLUMNS otherwise (detected once, from the version).
 */
public final class DstackCli {
  private static final Pattern VERSION = Pattern.compile("(\\d+)\\.(\\d+)\\.(\\d+)");
  private static final String BANNER = "A new version of dstack is available";

  /** A dstack call that failed, with the CLI's own message. */
  public static class DstackException extends RuntimeException {
    public DstackException(String message) {
      super(message);
    }
  }

  /** The run or fleet is unknown to dstack. */
  public static class NotFound extends DstackException {
    public NotFound(String message) {
      super(message);
    }
  }

  private final CommandRunner runner;
  private final List<String> command;
  private final Map<String, String> env;
  private final Duration timeout;
  private Future<Boolean> json;
  private CallObserver observer = (command, outcome, took) -> {};

  /** Told about every call (for metrics): the subcommand, {@code ok|error|timeout}, how long it took. */
  public interface CallObserver {
    void observe(String command, String outcome, Duration took);
  }

  public DstackCli(CommandRunner runner, List<String> command, Map<String, String> env, Duration timeout) {
    this.runner = runner;
    this.command = List.copyOf(command);
    Map<String, String> all = new HashMap<>(env);
    // Rich cuts table cells at 80 columns when stdout is not a terminal.
    all.put("COLUMNS", "400");
    all.put("NO_COLOR", "1");
    this.env = Map.copyOf(all);
    this.timeout = timeout;
  }

  /** The CLI as configured, each call timed into {@code kernel_runner_dstack_cli_seconds{command, outcome}}. */
  public static DstackCli create(io.vertx.core.Vertx vertx, dev.kernelrunner.config.AppConfig.Dstack settings,
                                 io.micrometer.core.instrument.MeterRegistry meters) {
    return new DstackCli(new CommandRunner(vertx), settings.command(), Map.of(), settings.cliTimeout())
        .observe((command, outcome, took) -> io.micrometer.core.instrument.Timer.builder("kernel_runner_dstack_cli")
            .description("dstack CLI calls by subcommand and outcome")
            .tag("command", command).tag("outcome", outcome).register(meters).record(took));
  }

  public DstackCli observe(CallObserver observer) {
    this.observer = observer;
    return this;
  }

  /** The argv prefix that runs the CLI, for messages. */
  public List<String> command() {
    return command;
  }

  /** Runs {@code dstack args...}; fails with the CLI's message on {@code [error]}, a non-zero exit or a timeout. */
  public Future<CommandRunner.Result> call(List<String> args) {
    List<String> argv = new ArrayList<>(command);
    argv.addAll(args);
    String subcommand = args.isEmpty() ? "" : args.get(0).startsWith("-") ? "version"
        : (args.get(0).equals("run") || args.get(0).equals("fleet")) && args.size() > 1
            ? args.get(0) + " " + args.get(1) : args.get(0);
    long started = System.nanoTime();
    Future<CommandRunner.Result> outcome = runner.run(argv, env, null, timeout)
        .recover(error -> Future.failedFuture(new DstackException("cannot run " + String.join(" ", command)
            + ": " + error.getMessage())))
        .compose(result -> {
      String what = "dstack " + String.join(" ", args);
      if (result.timedOut()) {
        return Future.failedFuture(new DstackException(what + " did not answer within " + timeout.toSeconds() + " s"));
      }
      var error = DstackOutput.error(result.stdout(), result.stderr());
      if (error.isPresent()) {
        String message = error.get();
        return Future.failedFuture(message.contains("not found") ? new NotFound(message)
            : new DstackException(message));
      }
      if (result.exitCode() != 0) {
        String output = (result.stderr() + "\n" + result.stdout()).strip();
        return Future.failedFuture(new DstackException(what + " exited with " + result.exitCode() + ": "
            + DstackOutput.abbreviate(output)));
      }
      return Future.succeededFuture(result);
    });
    return outcome.andThen(ar -> observer.observe(subcommand,
        ar.succeeded() ? "ok" : ar.cause().getMessage() != null && ar.cause().getMessage().contains("did not answer")
            ? "timeout" : "error", Duration.ofNanos(System.nanoTime() - started)));
  }

  /** {@code dstack --version}: the version it prints (the first line). */
  public Future<String> version() {
    return call(List.of("--version")).map(result -> {
      Matcher m = VERSION.matcher(result.stdout());
      return m.find() ? m.group() : result.stdout().strip();
    });
  }

  /** Whether this CLI has JSON output for runs ({@code run get --json}, 0.20.3+). Asked once. */
  public synchronized Future<Boolean> supportsJson() {
    if (json == null) {
      json = call(List.of("--version")).map(result -> {
        Matcher m = VERSION.matcher(result.stdout());
        if (!m.find()) {
          return true;
        }
        int major = Integer.parseInt(m.group(1));
        int minor = Integer.parseInt(m.group(2));
        int patch = Integer.parseInt(m.group(3));
        return major > 0 || minor > 20 || (minor == 20 && patch >= 3);
      });
    }
    return json;
  }

  /** {@code apply -f FILE -y -d}; fails when the CLI did not actually submit (an active run of that name). */
  public Future<Void> apply(Path configuration) {
    return call(List.of("apply", "-f", configuration.toString(), "-y", "-d")).compose(result -> {
      String out = result.stdout();
      if (out.contains("Use --force to apply anyway")) {
        return Future.failedFuture(new DstackException("dstack did not submit the run (it says: use --force)"));
      }
      return Future.<Void>succeededFuture();
    });
  }

  /** One run's state: {@code run get NAME --json}, or its row of {@code ps -a} on older CLIs. */
  public Future<RunState> run(String name) {
    return supportsJson().compose(json -> json
        ? call(List.of("run", "get", name, "--json")).compose(result -> {
          try {
            return Future.succeededFuture(DstackOutput.runState(DstackOutput.json(result.stdout())));
          } catch (DecodeException e) {
            return Future.failedFuture(new DstackException(e.getMessage()));
          }
        })
        : call(List.of("ps", "-a")).compose(result -> DstackOutput.table(result.stdout()).stream()
            .filter(row -> name.equals(row.get("NAME"))).findFirst()
            .map(row -> DstackOutput.isCut(row.get("STATUS"))
                ? Future.<RunState>failedFuture(new DstackException("dstack ps printed a table cut short (STATUS '"
                    + row.get("STATUS") + "'): the CLI ignores COLUMNS=400; the run's status cannot be read"))
                : Future.succeededFuture(DstackOutput.runState(row)))
            .orElseGet(() -> Future.failedFuture(new NotFound("Run " + name + " not found")))));
  }

  /** Everything the run's container has printed so far (dstack logs does not follow). */
  public Future<List<String>> logs(String name) {
    return call(List.of("logs", name)).map(result -> {
      List<String> lines = new ArrayList<>(result.stdout().lines().toList());
      // The update banner and its second line come first, once a day.
      if (!lines.isEmpty() && lines.get(0).startsWith(BANNER)) {
        lines.remove(0);
        if (!lines.isEmpty() && lines.get(0).startsWith("Run `pip install")) {
          lines.remove(0);
        }
      }
      return lines;
    });
  }

  public Future<Void> stop(String name, boolean abort) {
    List<String> args = new ArrayList<>(List.of("stop", name, "-y"));
    if (abort) {
      args.add("-x");
    }
    return call(args).mapEmpty();
  }

  /** Every run dstack lists ({@code ps -a}: at most 100, newest first). */
  public Future<List<RunState>> runs() {
    return supportsJson().compose(json -> json
        ? call(List.of("ps", "-a", "--json")).compose(result -> {
          try {
            List<RunState> runs = new ArrayList<>();
            DstackOutput.json(result.stdout()).getJsonArray("runs", new io.vertx.core.json.JsonArray())
                .forEach(run -> runs.add(DstackOutput.runState((JsonObject) run)));
            return Future.succeededFuture(runs);
          } catch (DecodeException | ClassCastException e) {
            return Future.failedFuture(new DstackException("unreadable ps output: " + e.getMessage()));
          }
        })
        : call(List.of("ps", "-a")).map(result -> DstackOutput.table(result.stdout()).stream()
            .map(DstackOutput::runState).toList()));
  }

  /**
   * A fleet as dstack describes it ({@code fleet get NAME --json}; on older CLIs its row of {@code fleet list},
   * as {@code {name, status, nodes, backend}}); fails with {@link NotFound} when there is none.
   */
  public Future<JsonObject> fleet(String name) {
    return supportsJson().compose(json -> json
        ? call(List.of("fleet", "get", name, "--json")).compose(result -> {
          try {
            return Future.succeededFuture(DstackOutput.json(result.stdout()));
          } catch (DecodeException e) {
            return Future.failedFuture(new DstackException(e.getMessage()));
          }
        })
        : call(List.of("fleet", "list")).compose(result -> DstackOutput.table(result.stdout(), "FLEET").stream()
            .filter(row -> name.equals(row.get("FLEET"))).findFirst()
            .map(row -> Future.succeededFuture(new JsonObject().put("name", name).put("status", row.get("STATUS"))
                .put("backend", row.get("BACKEND")).put("nodes", row.get("NODES"))))
            .orElseGet(() -> Future.failedFuture(new NotFound("Fleet " + name + " not found")))));
  }

  /** {@code apply -f FILE -y -d} of a fleet configuration: "submitted" or "unchanged". */
  public Future<String> applyFleet(Path configuration) {
    return call(List.of("apply", "-f", configuration.toString(), "-y", "-d"))
        .map(result -> result.stdout().contains("No configuration changes") ? "unchanged" : "submitted");
  }
}
