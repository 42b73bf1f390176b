package dev.kernelrunner.http;

import dev.kernelrunner.bus.Addresses;
import dev.kernelrunner.bus.Bus;
import dev.kernelrunner.config.AppConfig.GpuType;
import dev.kernelrunner.leaderboard.Board;
import dev.kernelrunner.leaderboard.BoardJson;
import io.vertx.core.eventbus.EventBus;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.Router;
import io.vertx.ext.web.RoutingContext;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;

/**
 * The leaderboards (any user or admin: {@code GET /api/leaderboards}, {@code GET /api/leaderboards/{problem}}) and
 * their moderation (admins: {@code POST|DELETE /api/admin/submissions/{id}/invalidate}). Who may rank is the
 * store's query ({@code LeaderboardSql}); the ranking is {@link Board}'s.
 */
final class LeaderboardApi {
  private static final int MAX_REASON = 500;

  private final EventBus bus;
  private final ProblemCatalog problems;
  private final Map<String, GpuType> gpuTypes;

  LeaderboardApi(EventBus bus, ProblemCatalog problems, Map<String, GpuType> gpuTypes) {
    this.bus = bus;
    this.problems = problems;
    this.gpuTypes = gpuTypes;
  }

  void install(Router router) {
    router.route("/api/leaderboards").method(HttpMethod.GET).method(HttpMethod.HEAD)
        .handler(ctx -> Bus.request(bus, Addresses.STORE_LEADERBOARDS, new JsonObject())
            .onSuccess(boards -> ApiError.send(ctx, 200, boards)).onFailure(error -> ApiError.fromFailure(ctx, error)));
    router.route("/api/leaderboards/:problem").method(HttpMethod.GET).method(HttpMethod.HEAD).handler(this::board);
    router.post("/api/admin/submissions/:id/invalidate").handler(ctx -> moderate(ctx, true));
    router.delete("/api/admin/submissions/:id/invalidate").handler(ctx -> moderate(ctx, false));
  }

  private void board(RoutingContext ctx) {
    String problemName = ctx.pathParam("problem");
    var problem = problems.get(problemName);
    if (problem.isEmpty()) {
      ApiError.send(ctx, 404, "not_found", "no problem '" + problemName + "'");
      return;
    }
    JsonArray errors = new JsonArray();
    String gpuType = ctx.queryParams().get("gpu_type");
    if (gpuType == null || gpuType.isEmpty()) {
      errors.add(ApiError.field("gpu_type", "a board is per GPU type: one of " + gpuTypes.keySet()));
    } else if (!gpuTypes.containsKey(gpuType)) {
      errors.add(ApiError.field("gpu_type", "unknown GPU type '" + gpuType + "': one of " + gpuTypes.keySet()));
    }
    String dtype = ctx.queryParams().get("dtype") == null ? SubmissionValidator.DEFAULT_DTYPE
        : ctx.queryParams().get("dtype");
    if (!problem.get().dtypes().contains(dtype)) {
      errors.add(ApiError.field("dtype", "problem '" + problemName + "' takes " + problem.get().dtypes()));
    }
    if (!errors.isEmpty()) {
      ApiError.validation(ctx, 400, errors);
      return;
    }
    JsonObject query = new JsonObject().put("problem", problemName).put("gpu_type", gpuType).put("dtype", dtype);
    Bus.request(bus, Addresses.STORE_LEADERBOARD, query).onSuccess(reply -> {
      List<Board.Candidate> candidates = new ArrayList<>();
      reply.getJsonArray("rows").forEach(row -> candidates.add(BoardJson.candidate((JsonObject) row)));
      List<Board.Entry> entries = Board.rank(candidates);
      JsonArray json = new JsonArray();
      entries.forEach(entry -> json.add(BoardJson.entry(entry)));
      ApiError.send(ctx, 200, query.copy().put("entries", json)
          .put("left_out", candidates.size() - entries.size()));
    }).onFailure(error -> ApiError.fromFailure(ctx, error));
  }

  private void moderate(RoutingContext ctx, boolean invalidate) {
    String id = ctx.pathParam("id");
    JsonArray errors = new JsonArray();
    try {
      UUID.fromString(id);
    } catch (IllegalArgumentException e) {
      ApiError.send(ctx, 404, "not_found", "no submission " + id);
      return;
    }
    String reason = null;
    if (invalidate) {
      JsonObject body;
      try {
        body = ctx.body().isEmpty() ? new JsonObject() : ctx.body().asJsonObject();
      } catch (RuntimeException e) {
        body = null;
      }
      Object given = body == null ? null : body.getValue("reason");
      if (body == null) {
        errors.add(ApiError.field("body", "must be a JSON object such as {\"reason\": \"...\"}"));
      } else if (!(given instanceof String text) || text.isBlank()) {
        errors.add(ApiError.field("reason", given == null ? "is required: say why, the owner will see it"
            : "must be a non-empty string"));
      } else if (text.length() > MAX_REASON) {
        errors.add(ApiError.field("reason", "at most " + MAX_REASON + " characters"));
      } else if (text.indexOf('\0') >= 0) {
        errors.add(ApiError.field("reason", "must not contain NUL"));
      } else {
        reason = text.strip();
      }
    }
    if (!errors.isEmpty()) {
      ApiError.validation(ctx, 400, errors);
      return;
    }
    Principal admin = ctx.get(HttpVerticle.PRINCIPAL);
    Bus.request(bus, Addresses.STORE_SUBMISSION_MODERATE, new JsonObject().put("id", id).put("invalidate", invalidate)
            .put("reason", reason).put("by", admin.userId()))
        .onSuccess(reply -> ApiError.send(ctx, 200, reply)).onFailure(error -> ApiError.fromFailure(ctx, error));
  }
}
