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

  /** The run is unknown to dstack. */
  public static class RunNotFound extends DstackException {
    public RunNotFound(String message) {
      super(message);
    }
  }

  private final CommandRunner runner;
  private final List<String> command;
  private final Map<String, String> env;
  private final Duration timeout;
  private Future<Boolean> json;

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

  /** Runs {@code dstack args...}; fails with the CLI's message on {@code [error]}, a non-zero exit or a timeout. */
  public Future<CommandRunner.Result> call(List<String> args) {
    List<String> argv = new ArrayList<>(command);
    argv.addAll(args);
    return runner.run(argv, env, null, timeout).compose(result -> {
      String what = "dstack " + String.join(" ", args);
      if (result.timedOut()) {
        return Future.failedFuture(new DstackException(what + " did not answer within " + timeout.toSeconds() + " s"));
      }
      var error = DstackOutput.error(result.stdout(), result.stderr());
      if (error.isPresent()) {
        String message = error.get();
        return Future.failedFuture(message.contains("not found") ? new RunNotFound(message)
            : new DstackException(message));
      }
      if (result.exitCode() != 0) {
        String output = (result.stderr() + "\n" + result.stdout()).strip();
        return Future.failedFuture(new DstackException(what + " exited with " + result.exitCode() + ": "
            + DstackOutput.abbreviate(output)));
      }
      return Future.succeededFuture(result);
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
            .map(row -> Future.succeededFuture(DstackOutput.runState(row)))
            .orElseGet(() -> Future.failedFuture(new RunNotFound("Run " + name + " not found")))));
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

  public Future<JsonObject> fleet(String name) {
    return call(List.of("fleet", "get", name, "--json")).compose(result -> {
      try {
        return Future.succeededFuture(DstackOutput.json(result.stdout()));
      } catch (DecodeException e) {
        return Future.failedFuture(new DstackException(e.getMessage()));
      }
    });
  }
}
