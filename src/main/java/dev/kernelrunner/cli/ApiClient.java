package dev.kernelrunner.cli;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.io.ByteArrayOutputStream;
import java.io.FilterInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.ConnectException;
import java.net.HttpURLConnection;
import java.net.SocketTimeoutException;
import java.net.URI;
import java.net.URL;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.util.HexFormat;

/**
 * The service's HTTP API as the terminal client uses it: JSON in and out, every failure a one-line {@link CliError}.
 * Whatever the server does, the client neither waits for ever (a connect timeout, and a read timeout on every read)
 * nor holds more than a bounded amount of what it sends (JSON answers up to {@link #MAX_JSON_BYTES}; a report goes
 * to disk, up to {@link #MAX_REPORT_BYTES}).
 */
final class ApiClient {
  static final int MAX_JSON_BYTES = 8 << 20;
  static final long MAX_REPORT_BYTES = 1L << 30;
  private static final int MAX_ERROR_BYTES = 64 << 10;
  private static final Duration CONNECT_TIMEOUT = Duration.ofSeconds(10);
  /** A cancel is answered once the submission's process is gone: the service's kill grace and its bus timeout. */
  private static final Duration CANCEL_PATIENCE = Duration.ofSeconds(90);
  private final ClientSettings settings;

  ApiClient(ClientSettings settings) {
    this.settings = settings;
  }

  /** A report saved to disk: where, its size, its SHA-256. */
  record Download(Path file, long size, String sha256) {}

  /** Where a download goes, from the file name the server suggests (null when none). */
  interface Target {
    Path pick(String suggested) throws CliError;
  }

  /** How long a read may wait for a byte before it fails. */
  Duration readTimeout() {
    return settings.readTimeout();
  }

  JsonObject get(String path) throws CliError {
    return json(open("GET", path, settings.readTimeout()), "GET " + path, null);
  }

  JsonObject post(String path, JsonObject body) throws CliError {
    return json(open("POST", path, settings.readTimeout()), "POST " + path, body);
  }

  JsonObject cancel(String id) throws CliError {
    String path = "/api/submissions/" + id + "/cancel";
    Duration patience = settings.readTimeout().compareTo(CANCEL_PATIENCE) > 0 ? settings.readTimeout()
        : CANCEL_PATIENCE;
    return json(open("POST", path, patience), "POST " + path, new JsonObject());
  }

  /**
   * The submission's event stream from after {@code lastSeq} (0: from the start), or null when the service says
   * nothing more will come (204); the caller closes it. A connect or a read that waits past its timeout throws
   * {@link SocketTimeoutException}.
   */
  InputStream events(String id, int lastSeq) throws CliError, SocketTimeoutException {
    HttpURLConnection connection = open("GET", "/api/submissions/" + id + "/events", settings.readTimeout());
    connection.setRequestProperty("Accept", "text/event-stream");
    if (lastSeq > 0) {
      connection.setRequestProperty("Last-Event-ID", String.valueOf(lastSeq));
    }
    int status;
    try {
      status = send(connection, null);
    } catch (SocketTimeoutException e) {
      connection.disconnect();
      throw e;
    }
    if (status == 204) {
      connection.disconnect();
      return null;
    }
    if (status != 200) {
      throw failure(connection, status);
    }
    return body(connection);
  }

  /**
   * Saves a file the service sends where {@code target} says, through a temporary file beside it: a short,
   * oversized or corrupt (X-Content-SHA256) file is never left there.
   */
  Download download(String path, Target target) throws CliError {
    HttpURLConnection connection = open("GET", path, settings.readTimeout());
    int status = status(connection, null);
    if (status != 200) {
      throw failure(connection, status);
    }
    if (connection.getContentLengthLong() > MAX_REPORT_BYTES) {
      connection.disconnect();
      throw tooLarge("GET " + path, MAX_REPORT_BYTES);
    }
    Path file;
    try {
      file = target.pick(suggestedName(connection.getHeaderField("Content-Disposition")));
    } catch (CliError e) {
      connection.disconnect();
      throw e;
    }
    Path absolute = file.toAbsolutePath();
    Path part = absolute.resolveSibling(absolute.getFileName() + ".part");
    MessageDigest sha256;
    try {
      sha256 = MessageDigest.getInstance("SHA-256");
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
    long size = 0;
    try (InputStream in = body(connection); OutputStream out = Files.newOutputStream(part)) {
      byte[] buffer = new byte[64 * 1024];
      for (int n = in.read(buffer); n >= 0; n = in.read(buffer)) {
        size += n;
        if (size > MAX_REPORT_BYTES) {
          throw tooLarge("GET " + path, MAX_REPORT_BYTES);
        }
        sha256.update(buffer, 0, n);
        out.write(buffer, 0, n);
      }
    } catch (IOException | CliError e) {
      deleteQuietly(part);
      throw e instanceof CliError error ? error : reading("GET " + path, (IOException) e);
    }
    String digest = HexFormat.of().formatHex(sha256.digest());
    String expected = connection.getHeaderField("X-Content-SHA256");
    if (expected != null && !expected.trim().equalsIgnoreCase(digest)) {
      deleteQuietly(part);
      throw new CliError("the report arrived corrupt (SHA-256 " + digest + ", the server said " + expected
          + "): nothing saved", Exit.OTHER, true);
    }
    try {
      Files.move(part, absolute, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
    } catch (IOException e) {
      deleteQuietly(part);
      throw new CliError("cannot save " + file + ": " + e.getMessage());
    }
    return new Download(file, size, digest);
  }

  private HttpURLConnection open(String method, String path, Duration readTimeout) throws CliError {
    URL url;
    try {
      url = URI.create(settings.server() + path).toURL();
    } catch (IllegalArgumentException | IOException e) {
      throw new CliError("the server address '" + settings.server() + "' is not a URL: " + e.getMessage());
    }
    String token = settings.requireToken();
    try {
      HttpURLConnection connection = (HttpURLConnection) url.openConnection();
      connection.setConnectTimeout((int) CONNECT_TIMEOUT.toMillis());
      connection.setReadTimeout((int) readTimeout.toMillis());
      connection.setInstanceFollowRedirects(false); // the token goes to this server only
      connection.setUseCaches(false);
      connection.setRequestMethod(method);
      connection.setRequestProperty("Authorization", "Bearer " + token);
      return connection;
    } catch (IOException e) {
      throw unreachable(e);
    }
  }

  /** Sends the request ({@code body} for a POST) and waits for the status line. */
  private int status(HttpURLConnection connection, JsonObject body) throws CliError {
    try {
      return send(connection, body);
    } catch (SocketTimeoutException e) {
      connection.disconnect();
      throw new CliError(settings.server() + " did not answer within " + seconds(connection) + " s", Exit.OTHER,
          true);
    }
  }

  private int send(HttpURLConnection connection, JsonObject body) throws CliError, SocketTimeoutException {
    try {
      if (body != null) {
        byte[] bytes = body.encode().getBytes(StandardCharsets.UTF_8);
        connection.setDoOutput(true);
        connection.setRequestProperty("Content-Type", "application/json");
        // Streamed, so that a POST is never sent twice behind the caller's back (a retried submit would be two).
        connection.setFixedLengthStreamingMode(bytes.length);
        try (OutputStream out = connection.getOutputStream()) {
          out.write(bytes);
        }
      }
      return connection.getResponseCode();
    } catch (ConnectException e) {
      throw new CliError("cannot reach " + settings.server() + " (connection refused): is the service running? "
          + "Set --server or KERNEL_RUNNER_SERVER to its address", Exit.OTHER, true);
    } catch (SocketTimeoutException e) {
      throw e;
    } catch (IOException e) {
      connection.disconnect();
      throw unreachable(e);
    }
  }

  private JsonObject json(HttpURLConnection connection, String what, JsonObject body) throws CliError {
    int status = status(connection, body);
    if (status / 100 != 2) {
      throw failure(connection, status);
    }
    if (connection.getContentLengthLong() > MAX_JSON_BYTES) {
      connection.disconnect();
      throw tooLarge(what, MAX_JSON_BYTES);
    }
    String text;
    try (InputStream in = body(connection)) {
      text = read(in, MAX_JSON_BYTES, what);
    } catch (IOException e) {
      throw reading(what, e);
    }
    try {
      return text.isEmpty() ? new JsonObject() : new JsonObject(text);
    } catch (RuntimeException e) {
      throw new CliError(settings.server() + " answered " + what + " with something that is not a JSON object (is it"
          + " a kernel-runner?)");
    }
  }

  /** At most {@code limit} bytes of {@code in} as UTF-8; a longer body is refused, unread. */
  private String read(InputStream in, int limit, String what) throws IOException, CliError {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    byte[] buffer = new byte[16 * 1024];
    for (int n = in.read(buffer); n >= 0; n = in.read(buffer)) {
      if (bytes.size() + n > limit) {
        throw tooLarge(what, limit);
      }
      bytes.write(buffer, 0, n);
    }
    return bytes.toString(StandardCharsets.UTF_8);
  }

  /** The response body; closing it closes the connection too (nothing unread is drained, no stalled socket kept). */
  private static InputStream body(HttpURLConnection connection) throws CliError {
    InputStream in;
    try {
      in = connection.getInputStream();
    } catch (IOException e) {
      connection.disconnect();
      throw new CliError("lost the answer: " + e.getMessage(), Exit.OTHER, true);
    }
    return new FilterInputStream(in) {
      @Override
      public void close() {
        connection.disconnect();
      }
    };
  }

  private CliError tooLarge(String what, long limit) {
    return new CliError(settings.server() + " sent over " + (limit >> 20) + " MiB in answer to " + what
        + ": refused (is it a kernel-runner?)");
  }

  private CliError reading(String what, IOException e) {
    if (e instanceof SocketTimeoutException) {
      return new CliError(settings.server() + " stopped sending its answer to " + what + " for "
          + settings.readTimeout().toSeconds() + " s: gave up", Exit.OTHER, true);
    }
    return new CliError("lost the answer to " + what + ": " + (e.getMessage() == null ? e : e.getMessage()),
        Exit.OTHER, true);
  }

  private CliError unreachable(IOException e) {
    return new CliError("cannot reach " + settings.server() + ": " + (e.getMessage() == null ? e : e.getMessage()),
        Exit.OTHER, true);
  }

  private static long seconds(HttpURLConnection connection) {
    return Duration.ofMillis(connection.getReadTimeout()).toSeconds();
  }

  /** The service's error, in one line: its message and the fields it names. */
  private CliError failure(HttpURLConnection connection, int status) {
    String body = "";
    InputStream error = connection.getErrorStream();
    if (error != null) {
      try (InputStream in = error) {
        body = new String(in.readNBytes(MAX_ERROR_BYTES), StandardCharsets.UTF_8);
      } catch (IOException e) {
        body = "";
      }
    }
    connection.disconnect();
    String message;
    try {
      JsonObject json = new JsonObject(body);
      StringBuilder text = new StringBuilder(String.valueOf(json.getValue("message", "HTTP " + status)));
      JsonArray details = json.getJsonArray("details");
      if (details != null) {
        for (Object detail : details) {
          if (detail instanceof JsonObject field) {
            text.append("; ").append(field.getValue("field")).append(": ").append(field.getValue("message"));
          }
        }
      }
      message = text.toString();
    } catch (RuntimeException e) {
      message = "HTTP " + status;
    }
    boolean passing = status >= 500;
    return new CliError(switch (status) {
      case 401 -> "the service refused the token (" + message + "): check --token or KERNEL_RUNNER_TOKEN";
      case 403 -> "not allowed with this token: " + message;
      default -> message + " (HTTP " + status + ")";
    }, Exit.OTHER, passing);
  }

  /** The file name of a {@code Content-Disposition: attachment; filename="..."}, or null. */
  private static String suggestedName(String disposition) {
    if (disposition == null) {
      return null;
    }
    java.util.regex.Matcher name = java.util.regex.Pattern.compile("filename=\"?([^\";]*)").matcher(disposition);
    return name.find() ? name.group(1) : null;
  }

  private static void deleteQuietly(Path file) {
    try {
      Files.deleteIfExists(file);
    } catch (IOException ignored) {
      // a leftover .part file is harmless
    }
  }
}
