package dev.kernelrunner.support;

import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonObject;
import io.vertx.openapi.contract.OpenAPIContract;
import io.vertx.openapi.contract.Operation;
import io.vertx.openapi.contract.Response;
import io.vertx.openapi.validation.ResponseValidator;
import io.vertx.openapi.validation.ValidatableResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

/**
 * Every response the tests receive through {@link TestService} is checked against the service's own
 * description, {@code src/main/resources/openapi.json} (OpenAPI 3.1, loaded and itself validated by
 * vertx-openapi): the call must be described, its status too (an error of the route's own declared; 500 and 405
 * may fall to the default error), and a JSON body must
 * match its schema. A response that does not fails the test that received it.
 */
public final class OpenApiCheck {
  public static final Path DOCUMENT = Path.of("src/main/resources/openapi.json");
  private static OpenAPIContract contract;
  private static ResponseValidator validator;

  private OpenApiCheck() {}

  private static synchronized OpenAPIContract contract() throws Exception {
    if (contract == null) {
      Vertx vertx = Vertx.vertx();
      contract = OpenAPIContract.from(vertx, validatable(new JsonObject(Files.readString(DOCUMENT))))
          .toCompletionStage().toCompletableFuture().get(60, TimeUnit.SECONDS);
      validator = ResponseValidator.create(vertx, contract);
    }
    return contract;
  }

  /**
   * The document without its servers and event streams: vertx-openapi refuses a contract that names
   * {@code text/event-stream}, and cannot check a stream anyway. Such a response keeps an empty content, and
   * {@link #check} allows the stream's media type there.
   */
  private static JsonObject validatable(JsonObject document) {
    JsonObject copy = document.copy();
    // servers: "/" (relative to where the document is served) is valid OpenAPI, but vertx-openapi takes only an
    // absolute URL there; without servers it matches the paths as they are, which is the same here.
    copy.remove("servers");
    copy.getJsonObject("paths").forEach(path -> ((JsonObject) path.getValue()).forEach(operation ->
        withoutStreams(((JsonObject) operation.getValue()).getJsonObject("responses"))));
    JsonObject components = copy.getJsonObject("components");
    if (components != null && components.getJsonObject("responses") != null) {
      withoutStreams(components.getJsonObject("responses")); // shared ones, such as EventStream
    }
    return copy;
  }

  private static void withoutStreams(JsonObject responses) {
    responses.forEach(response -> {
      JsonObject content = ((JsonObject) response.getValue()).getJsonObject("content");
      if (content != null && content.remove(EVENT_STREAM) != null && content.isEmpty()) {
        ((JsonObject) response.getValue()).remove("content");
        ((JsonObject) response.getValue()).put("x-event-stream", true);
      }
    });
  }

  private static final String EVENT_STREAM = "text/event-stream";

  /** The contract (loading it checks the document against OpenAPI 3.1). */
  public static OpenAPIContract load() throws Exception {
    return contract();
  }

  /** Throws AssertionError when the response is not as the description says. */
  public static void check(String method, String uriPath, int status, String contentType, byte[] body) {
    String path = uriPath.contains("?") ? uriPath.substring(0, uriPath.indexOf('?')) : uriPath;
    if (!path.startsWith("/api/") && !path.startsWith("/health/") && !path.equals("/metrics")
        && !path.equals("/openapi.json")) {
      return; // the web client's files: pages, not the API
    }
    String call = method + " " + path + " -> " + status;
    Operation operation;
    try {
      operation = contract().findOperation(path, HttpMethod.valueOf(method));
    } catch (Exception e) {
      throw new AssertionError("cannot load " + DOCUMENT + ": " + e, e);
    }
    if (operation == null) {
      throw new AssertionError(call + ": not described in " + DOCUMENT);
    }
    // An error a route sends is declared with it; only 500 and 405, which any route may give, are left to default.
    boolean declared = operation.getResponse(status) != null;
    if (!declared && status >= 400 && status != 500 && status != 405) {
      throw new AssertionError(call + ": status not declared for " + operation.getOperationId()
          + " (only 500 and 405 fall to default)");
    }
    Response response = declared ? operation.getResponse(status) : operation.getDefaultResponse();
    if (response == null) {
      throw new AssertionError(call + ": status not described for " + operation.getOperationId());
    }
    String media = contentType == null ? null : contentType.split(";")[0].trim();
    if (!"application/json".equals(media)) {
      boolean stream = EVENT_STREAM.equals(media)
          && Boolean.TRUE.equals(response.getOpenAPIModel().getValue("x-event-stream"));
      if (body.length > 0 && media != null && !stream && !response.getContent().containsKey(media)) {
        throw new AssertionError(call + ": " + media + " not described for " + operation.getOperationId());
      }
      return;
    }
    try {
      validator.validate(ValidatableResponse.create(status, Buffer.buffer(body), media), operation.getOperationId())
          .toCompletionStage().toCompletableFuture().get(30, TimeUnit.SECONDS);
    } catch (Exception e) {
      Throwable cause = e.getCause() != null ? e.getCause() : e;
      throw new AssertionError(call + " does not match " + DOCUMENT + ": " + cause.getMessage() + "\n"
          + new String(body, 0, Math.min(body.length, 2000), java.nio.charset.StandardCharsets.UTF_8), cause);
    }
  }
}
