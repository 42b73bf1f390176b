package dev.kernelrunner.cli;

import io.vertx.core.json.JsonObject;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.Map;
import java.util.Set;

/**
 * Where the terminal client finds the service and its token: {@code --server}/{@code --token}, else
 * {@code KERNEL_RUNNER_SERVER}/{@code KERNEL_RUNNER_TOKEN}, else {@code ~/.config/kernel-runner/config.json}
 * ({@code {"server": ..., "token": ...}}); the server defaults to the service's own default address. A config file
 * others may write (they could send the token elsewhere), or read while it holds a token, is refused, as ssh refuses
 * such a private key. {@code KERNEL_RUNNER_READ_TIMEOUT_SECONDS} is how long a read may wait for a byte.
 */
record ClientSettings(String server, String token, Duration readTimeout) {
  static final String DEFAULT_SERVER = "http://127.0.0.1:8080";
  /** Over twice the service's default SSE heartbeat (15 s): a stream this quiet has stalled. */
  static final int DEFAULT_READ_TIMEOUT_SECONDS = 40;
  private static final long MAX_CONFIG_BYTES = 64 * 1024;

  static Path configFile(Map<String, String> env) {
    String home = env.getOrDefault("HOME", System.getProperty("user.home"));
    return Path.of(home, ".config", "kernel-runner", "config.json");
  }

  static ClientSettings resolve(String serverFlag, String tokenFlag, Map<String, String> env) throws CliError {
    Path path = configFile(env);
    JsonObject file = Files.isRegularFile(path) ? read(path) : new JsonObject();
    String server = first(serverFlag, env.get("KERNEL_RUNNER_SERVER"), file.getValue("server"), DEFAULT_SERVER);
    String token = first(tokenFlag, env.get("KERNEL_RUNNER_TOKEN"), file.getValue("token"), null);
    if (!server.startsWith("http://") && !server.startsWith("https://")) {
      throw new CliError("the server must be an http:// or https:// URL, not '" + server + "'");
    }
    return new ClientSettings(server.replaceAll("/+$", ""), token, readTimeout(env));
  }

  private static JsonObject read(Path path) throws CliError {
    Set<PosixFilePermission> permissions = null;
    try {
      permissions = Files.getPosixFilePermissions(path);
    } catch (UnsupportedOperationException | IOException e) {
      // no POSIX permissions to check here
    }
    boolean othersWrite = permissions != null && (permissions.contains(PosixFilePermission.GROUP_WRITE)
        || permissions.contains(PosixFilePermission.OTHERS_WRITE));
    if (othersWrite) {
      throw refused(path, permissions, "let others change it (and send your token elsewhere)");
    }
    JsonObject file;
    try {
      if (Files.size(path) > MAX_CONFIG_BYTES) {
        throw new CliError(path + " is over 64 KiB: not a kernel-runner config file");
      }
      file = new JsonObject(Files.readString(path));
    } catch (IOException | RuntimeException e) {
      throw new CliError(path + " is not a JSON object such as {\"server\": \"http://host:8080\", \"token\": \"...\"}: "
          + e.getMessage());
    }
    boolean othersRead = permissions != null && (permissions.contains(PosixFilePermission.GROUP_READ)
        || permissions.contains(PosixFilePermission.OTHERS_READ));
    if (othersRead && file.getValue("token") != null) {
      throw refused(path, permissions, "let others read its token");
    }
    return file;
  }

  private static CliError refused(Path path, Set<PosixFilePermission> permissions, String why) {
    return new CliError("refusing " + path + ": its permissions " + PosixFilePermissions.toString(permissions)
        + " " + why + "; fix it with: chmod 600 " + path);
  }

  private static Duration readTimeout(Map<String, String> env) throws CliError {
    String value = env.get("KERNEL_RUNNER_READ_TIMEOUT_SECONDS");
    if (value == null || value.isBlank()) {
      return Duration.ofSeconds(DEFAULT_READ_TIMEOUT_SECONDS);
    }
    try {
      int seconds = Integer.parseInt(value.trim());
      if (seconds >= 1 && seconds <= 3600) {
        return Duration.ofSeconds(seconds);
      }
    } catch (NumberFormatException e) {
      // said below
    }
    throw new CliError("KERNEL_RUNNER_READ_TIMEOUT_SECONDS must be a whole number of seconds from 1 to 3600, not '"
        + value + "'", Exit.USAGE);
  }

  /** The token, or an error saying how to give one. */
  String requireToken() throws CliError {
    if (token == null) {
      throw new CliError("no token: pass --token TOKEN, set KERNEL_RUNNER_TOKEN, or put {\"token\": \"...\"} in "
          + "~/.config/kernel-runner/config.json (an admin makes one with POST /api/admin/tokens)");
    }
    return token;
  }

  private static String first(String a, String b, Object c, String fallback) {
    if (a != null && !a.isBlank()) {
      return a;
    }
    if (b != null && !b.isBlank()) {
      return b;
    }
    return c instanceof String s && !s.isBlank() ? s : fallback;
  }
}
