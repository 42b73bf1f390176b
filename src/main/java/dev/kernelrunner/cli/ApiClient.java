package dev.kernelrunner.cli;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.io.IOException;
import java.io.InputStream;
import java.net.ConnectException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.time.Duration;

/** The service's HTTP API as the terminal client uses it: JSON in and out, every failure a one-line {@link CliError}. */
final class ApiClient {
  private static final Duration TIMEOUT = Duration.ofSeconds(60);
  private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();
  private final ClientSettings settings;

  ApiClient(ClientSettings settings) {
    this.settings = settings;
  }

  JsonObject get(String path) throws CliError {
    return json(request(path).GET());
  }

  JsonObject post(String path, JsonObject body) throws CliError {
    return json(request(path).header("Content-Type", "application/json")
        .POST(HttpRequest.BodyPublishers.ofString(body.encode())));
  }

  /** The submission's event stream from after {@code lastSeq} (0: from the start); the caller closes it. */
  InputStream events(String id, int lastSeq) throws CliError {
    HttpRequest.Builder request = HttpRequest.newBuilder(uri("/api/submissions/" + id + "/events"))
        .header("Authorization", "Bearer " + settings.requireToken()).header("Accept", "text/event-stream").GET();
    if (lastSeq > 0) {
      request.header("Last-Event-ID", String.valueOf(lastSeq));
    }
    HttpResponse<InputStream> response = send(request, HttpResponse.BodyHandlers.ofInputStream());
    if (response.statusCode() != 200) {
      String body;
      try (InputStream in = response.body()) {
        body = new String(in.readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
      } catch (IOException e) {
        body = "";
      }
      throw failure(response.statusCode(), body);
    }
    return response.body();
  }

  private HttpRequest.Builder request(String path) throws CliError {
    return HttpRequest.newBuilder(uri(path)).timeout(TIMEOUT).header("Authorization", "Bearer " + settings.requireToken());
  }

  private URI uri(String path) throws CliError {
    try {
      return URI.create(settings.server() + path);
    } catch (IllegalArgumentException e) {
      throw new CliError("the server address '" + settings.server() + "' is not a URL: " + e.getMessage());
    }
  }

  private JsonObject json(HttpRequest.Builder request) throws CliError {
    HttpResponse<String> response = send(request, HttpResponse.BodyHandlers.ofString());
    if (response.statusCode() / 100 != 2) {
      throw failure(response.statusCode(), response.body());
    }
    try {
      return response.body().isEmpty() ? new JsonObject() : new JsonObject(response.body());
    } catch (RuntimeException e) {
      throw new CliError(settings.server() + " answered something that is not JSON (is it a kernel-runner?)");
    }
  }

  private <T> HttpResponse<T> send(HttpRequest.Builder request, HttpResponse.BodyHandler<T> handler) throws CliError {
    try {
      return http.send(request.build(), handler);
    } catch (ConnectException e) {
      throw new CliError("cannot reach " + settings.server() + " (connection refused): is the service running? "
          + "Set --server or KERNEL_RUNNER_SERVER to its address", Exit.OTHER, true);
    } catch (HttpTimeoutException e) {
      throw new CliError(settings.server() + " did not answer in time", Exit.OTHER, true);
    } catch (IOException e) {
      throw new CliError("cannot reach " + settings.server() + ": " + (e.getMessage() == null ? e : e.getMessage()),
          Exit.OTHER, true);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new CliError("interrupted");
    }
  }

  /** The service's error, in one line: its message and the fields it names. */
  private CliError failure(int status, String body) {
    String message;
    try {
      JsonObject error = new JsonObject(body);
      StringBuilder text = new StringBuilder(error.getString("message", "HTTP " + status));
      JsonArray details = error.getJsonArray("details");
      if (details != null) {
        for (Object detail : details) {
          if (detail instanceof JsonObject field) {
            text.append("; ").append(field.getString("field")).append(": ").append(field.getString("message"));
          }
        }
      }
      message = text.toString();
    } catch (RuntimeException e) {
      message = "HTTP " + status;
    }
    return new CliError(switch (status) {
      case 401 -> "the service refused the token (" + message + "): check --token or KERNEL_RUNNER_TOKEN";
      case 403 -> "not allowed with this token: " + message;
      default -> message + " (HTTP " + status + ")";
    });
  }
}
