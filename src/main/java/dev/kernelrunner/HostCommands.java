package dev.kernelrunner;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Small commands on this host that start-up needs (the embedded PostgreSQL, the agents' sandbox): whether the
 * service is root, system users, and running a command to its exit code. Blocking: from {@code main} or a worker.
 */
public final class HostCommands {
  private static final Logger log = LoggerFactory.getLogger(HostCommands.class);

  private HostCommands() {}

  public static boolean isRoot() {
    return "root".equals(System.getProperty("user.name"));
  }

  public static boolean userExists(String user) throws IOException, InterruptedException {
    return exec(List.of("id", "-u", user), 10) == 0;
  }

  /** {@code useradd --system <options> <user>}; its exit code. */
  public static int addSystemUser(String user, List<String> options) throws IOException, InterruptedException {
    List<String> argv = new ArrayList<>(List.of("useradd", "--system"));
    argv.addAll(options);
    argv.add(user);
    return exec(argv, 30);
  }

  /** Runs {@code argv} (no shell, no input) and answers its exit code; what it printed is logged on failure. */
  public static int exec(List<String> argv, int timeoutSeconds) throws IOException, InterruptedException {
    Process process = new ProcessBuilder(argv).redirectErrorStream(true).start();
    process.getOutputStream().close();
    byte[] output = process.getInputStream().readAllBytes();
    if (!process.waitFor(timeoutSeconds, TimeUnit.SECONDS)) {
      process.destroyForcibly();
      throw new IOException(String.join(" ", argv) + " did not finish in " + timeoutSeconds + " s");
    }
    if (process.exitValue() != 0 && output.length > 0) {
      log.debug("{} -> {}: {}", argv, process.exitValue(), new String(output, StandardCharsets.UTF_8).trim());
    }
    return process.exitValue();
  }
}
