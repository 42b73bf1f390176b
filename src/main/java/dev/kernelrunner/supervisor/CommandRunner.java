package dev.kernelrunner.supervisor;

import io.vertx.core.Future;
import io.vertx.core.Vertx;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * Runs a short command (a CLI call) to completion off the event loop: argv without a shell, a timeout after
 * which its whole process tree is killed, stdout and stderr captured in full.
 */
public final class CommandRunner {
  /** What a finished (or timed-out) command left. {@code exitCode} is -1 after a timeout. */
  public record Result(List<String> argv, int exitCode, String stdout, String stderr, boolean timedOut,
                       Duration took) {}

  private final Vertx vertx;

  public CommandRunner(Vertx vertx) {
    this.vertx = vertx;
  }

  public Future<Result> run(List<String> argv, Map<String, String> env, Path workdir, Duration timeout) {
    return vertx.executeBlocking(() -> runBlocking(argv, env, workdir, timeout), false);
  }

  static Result runBlocking(List<String> argv, Map<String, String> env, Path workdir, Duration timeout)
      throws IOException, InterruptedException {
    List<String> command = new ArrayList<>(ProcessTree.sessionLeaderPrefix());
    command.addAll(argv);
    ProcessBuilder builder = new ProcessBuilder(command)
        .redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null")));
    if (workdir != null) {
      builder.directory(workdir.toFile());
    }
    builder.environment().putAll(env);
    long started = System.nanoTime();
    Process process = builder.start();
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    Thread outReader = drain(process.getInputStream(), out);
    Thread errReader = drain(process.getErrorStream(), err);
    boolean finished = process.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS);
    if (!finished) {
      ProcessTree.signal(process.pid(), true);
      process.waitFor(5, TimeUnit.SECONDS);
    }
    outReader.join(2000);
    errReader.join(2000);
    Duration took = Duration.ofNanos(System.nanoTime() - started);
    return new Result(List.copyOf(argv), finished ? process.exitValue() : -1,
        text(out), text(err), !finished, took);
  }

  private static String text(ByteArrayOutputStream bytes) {
    synchronized (bytes) {
      return bytes.toString(StandardCharsets.UTF_8);
    }
  }

  private static Thread drain(InputStream stream, ByteArrayOutputStream sink) {
    Thread thread = new Thread(() -> {
      byte[] buffer = new byte[8192];
      try (InputStream in = stream) {
        int n;
        while ((n = in.read(buffer)) != -1) {
          synchronized (sink) {
            sink.write(buffer, 0, n);
          }
        }
      } catch (IOException e) {
        // the process is gone
      }
    }, "command-output");
    thread.setDaemon(true);
    thread.start();
    return thread;
  }
}
