package dev.kernelrunner.config;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

/**
 * Where the dstack server is, found as dstack's own tools find it (core/services/api_client.py:14-41,
 * {@code get_api_client}): {@code DSTACK_SERVER_URL} and {@code DSTACK_TOKEN} with {@code DSTACK_PROJECT} (all three
 * needed, lines 18-25); else the project named by {@code DSTACK_PROJECT}, or the default one, in
 * {@code ~/.dstack/config.yml} ({@code projects: [{name, url, token, default}]}, core/models/config.py:8-29,
 * read by core/services/configs/__init__.py:44-51), whose token {@code DSTACK_TOKEN} overrides when set (lines 37-39);
 * a {@code DSTACK_SERVER_URL} without {@code DSTACK_TOKEN} and no such project is an error (lines 29-33). All null
 * when neither says: dstack is not configured.
 */
record DstackConnection(String url, String token, String project, String source) {
  static final String ENVIRONMENT = "DSTACK_SERVER_URL, DSTACK_TOKEN and DSTACK_PROJECT";

  static DstackConnection resolve(Map<String, String> env, List<String> problems) {
    String url = blankToNull(env.get("DSTACK_SERVER_URL"));
    String token = blankToNull(env.get("DSTACK_TOKEN"));
    String project = blankToNull(env.get("DSTACK_PROJECT"));
    if (url != null && token != null) {
      if (project == null) {
        problems.add("dstack: DSTACK_SERVER_URL and DSTACK_TOKEN are set, but the project is not: set "
            + "DSTACK_PROJECT (DSTACK_SERVER_URL, DSTACK_TOKEN and DSTACK_PROJECT go together)");
        return none();
      }
      return checked(new DstackConnection(url, token, project, ENVIRONMENT), problems);
    }
    String home = env.getOrDefault("HOME", System.getProperty("user.home"));
    Path file = Path.of(home, ".dstack", "config.yml");
    if (!Files.isRegularFile(file)) {
      if (url != null) {
        problems.add("dstack: DSTACK_SERVER_URL is set, but DSTACK_TOKEN is not (DSTACK_SERVER_URL, DSTACK_TOKEN and "
            + "DSTACK_PROJECT go together, or use ~/.dstack/config.yml)");
      } else if (token != null) {
        problems.add("dstack: DSTACK_TOKEN is set, but there is no " + file + " whose server it would be for (set "
            + "DSTACK_SERVER_URL and DSTACK_PROJECT too)");
      }
      return none();
    }
    JsonNode root;
    try {
      root = new ObjectMapper(new YAMLFactory()).readTree(file.toFile());
    } catch (IOException e) {
      problems.add("dstack: " + file + " is not readable YAML: " + e.getMessage());
      return none();
    }
    for (JsonNode entry : root == null ? List.<JsonNode>of() : iterable(root.path("projects"))) {
      boolean chosen = project != null ? project.equals(entry.path("name").asText(null))
          : entry.path("default").asBoolean(false);
      if (chosen) {
        // DSTACK_TOKEN overrides the configured token (api_client.py:37-39)
        String chosenToken = token != null ? token : entry.path("token").asText(null);
        return checked(new DstackConnection(entry.path("url").asText(null), chosenToken,
            entry.path("name").asText(null), token != null ? file + " with DSTACK_TOKEN" : file.toString()), problems);
      }
    }
    problems.add("dstack: " + file + " has " + (project != null ? "no project named " + project
        : "no default project") + " (run `dstack project set-default`, or set DSTACK_PROJECT)");
    return none();
  }

  private static DstackConnection checked(DstackConnection connection, List<String> problems) {
    if (connection.url() == null || !(connection.url().startsWith("http://") || connection.url().startsWith("https://"))) {
      problems.add("dstack: the server URL from " + connection.source() + " must start with http:// or https://, got '"
          + connection.url() + "'");
    }
    if (connection.token() == null || connection.project() == null) {
      problems.add("dstack: " + connection.source() + " gives no token or project name");
    }
    String url = connection.url() == null ? null : connection.url().replaceAll("/+$", "");
    return new DstackConnection(url, connection.token(), connection.project(), connection.source());
  }

  private static Iterable<JsonNode> iterable(JsonNode array) {
    return array.isArray() ? array::elements : List.of();
  }

  private static DstackConnection none() {
    return new DstackConnection(null, null, null, null);
  }

  private static String blankToNull(String value) {
    return value == null || value.isBlank() ? null : value.trim();
  }

  @Override
  public String toString() {
    return "DstackConnection[" + url + ", " + project + ", " + source + "]";
  }
}
