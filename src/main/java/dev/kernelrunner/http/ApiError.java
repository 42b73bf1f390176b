package dev.kernelrunner.http;

import dev.kernelrunner.bus.Failures;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.RoutingContext;

/** JSON error replies: {@code {"error": "<kind>", "message": ..., "details": [{"field", "message"}]}}. */
final class ApiError {
  private ApiError() {}

  static void send(RoutingContext ctx, int status, String kind, String message) {
    send(ctx, status, new JsonObject().put("error", kind).put("message", message));
  }

  static void validation(RoutingContext ctx, int status, JsonArray details) {
    send(ctx, status, new JsonObject().put("error", "validation")
        .put("message", "the request has invalid fields").put("details", details));
  }

  static JsonObject field(String field, String message) {
    return new JsonObject().put("field", field).put("message", message);
  }

  /** Maps a bus failure (whose code is an HTTP status) to its reply. */
  static void fromFailure(RoutingContext ctx, Throwable error) {
    int code = Failures.code(error);
    String kind = switch (code) {
      case Failures.NOT_FOUND -> "not_found";
      case Failures.CONFLICT -> "conflict";
      case Failures.TOO_MANY -> "too_many_active";
      case Failures.UNAVAILABLE -> "unavailable";
      case Failures.BAD_REQUEST -> "bad_request";
      case 401 -> "unauthorized";
      case 403 -> "forbidden";
      default -> code >= 500 ? "internal" : "error";
    };
    send(ctx, code, kind, error.getMessage());
  }

  static void send(RoutingContext ctx, int status, JsonObject body) {
    if (ctx.response().headWritten()) {
      ctx.response().reset();
      return;
    }
    ctx.response().setStatusCode(status).putHeader("Content-Type", "application/json").end(body.encode());
  }
}
