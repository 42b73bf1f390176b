package dev.kernelrunner.cli;

import io.vertx.core.json.JsonObject;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;

/**
 * Where the terminal client finds the service and its token: {@code --server}/{@code --token}, else
 * {@code KERNEL_RUNNER_SERVER}/{@code KERNEL_RUNNER_TOKEN}, else {@code ~/.config/kernel-runner/config.json}
 * ({@code {"server": ..., "token": ...}}); the server defaults to the service's own default address.
 */
record ClientSettings(String server, String token) {
  static final String DEFAULT_SERVER = "http://127.0.0.1:8080";

  static Path configFile(Map<String, String> env) {
    String home = env.getOrDefault("HOME", System.getProperty("user.home"));
    return Path.of(home, ".config", "kernel-runner", "config.json");
  }

  static ClientSettings resolve(String serverFlag, String tokenFlag, Map<String, String> env) throws CliError {
    JsonObject file = new JsonObject();
    Path path = configFile(env);
    if (Files.isRegularFile(path)) {
      try {
        file = new JsonObject(Files.readString(path));
      } catch (IOException | RuntimeException e) {
        throw new CliError(path + " is not a JSON object such as {\"server\": \"http://host:8080\", \"token\": \"...\"}: "
            + e.getMessage());
      }
    }
    String server = first(serverFlag, env.get("KERNEL_RUNNER_SERVER"), file.getValue("server"), DEFAULT_SERVER);
    String token = first(tokenFlag, env.get("KERNEL_RUNNER_TOKEN"), file.getValue("token"), null);
    if (!server.startsWith("http://") && !server.startsWith("https://")) {
      throw new CliError("the server must be an http:// or https:// URL, not '" + server + "'");
    }
    return new ClientSettings(server.replaceAll("/+$", ""), token);
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
