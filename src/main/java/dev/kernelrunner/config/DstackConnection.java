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
 * Where the dstack server is, found as dstack's own tools find it: {@code DSTACK_SERVER_URL} and
 * {@code DSTACK_TOKEN} with {@code DSTACK_PROJECT} (dstack's {@code Client.from_config}, api/_public/__init__.py:51-82,
 * needs all three), else the project named by {@code DSTACK_PROJECT}, or the default one, in
 * {@code ~/.dstack/config.yml} ({@code projects: [{name, url, token, default}]}, core/models/config.py:8-29,
 * read by core/services/configs/__init__.py:44-51). All null when neither says: dstack is not configured.
 */
record DstackConnection(String url, String token, String project, String source) {
  static final String ENVIRONMENT = "DSTACK_SERVER_URL, DSTACK_TOKEN and DSTACK_PROJECT";

  static DstackConnection resolve(Map<String, String> env, List<String> problems) {
    String url = blankToNull(env.get("DSTACK_SERVER_URL"));
    String token = blankToNull(env.get("DSTACK_TOKEN"));
    String project = blankToNull(env.get("DSTACK_PROJECT"));
    if (url != null || token != null) {
      if (url == null || token == null || project == null) {
        problems.add("dstack: DSTACK_SERVER_URL, DSTACK_TOKEN and DSTACK_PROJECT go together (set all three, or "
            + "none and use ~/.dstack/config.yml)");
        return none();
      }
      return checked(new DstackConnection(url, token, project, ENVIRONMENT), problems);
    }
    String home = env.getOrDefault("HOME", System.getProperty("user.home"));
    Path file = Path.of(home, ".dstack", "config.yml");
    if (!Files.isRegularFile(file)) {
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
        return checked(new DstackConnection(entry.path("url").asText(null), entry.path("token").asText(null),
            entry.path("name").asText(null), file.toString()), problems);
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
