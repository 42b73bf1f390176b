package dev.kernelrunner.store;

import dev.kernelrunner.baselines.BaselineFile;
import dev.kernelrunner.bus.Addresses;
import dev.kernelrunner.bus.Bus;
import dev.kernelrunner.bus.Failures;
import dev.kernelrunner.bus.ForSubmission;
import dev.kernelrunner.bus.Failures.CodedException;
import dev.kernelrunner.bus.Revocations;
import dev.kernelrunner.model.EventAppend;
import dev.kernelrunner.model.EventWrite;
import dev.kernelrunner.model.Unfinished;
import dev.kernelrunner.model.EventFrame;
import dev.kernelrunner.model.EventType;
import dev.kernelrunner.model.NewEvent;
import dev.kernelrunner.model.ProfileReport;
import io.micrometer.core.instrument.MeterRegistry;
import io.vertx.core.Future;
import io.vertx.core.VerticleBase;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.eventbus.Message;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.pgclient.PgBuilder;
import io.vertx.pgclient.PgConnectOptions;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.PoolOptions;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.RowSet;
import io.vertx.sqlclient.Tuple;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.security.SecureRandom;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.Base64;
import java.util.EnumMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.function.Function;
import org.flywaydb.core.Flyway;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** The only code that touches the database: owns the pool, applies migrations, answers {@code store.*}. */
public class ResultStoreVerticle extends VerticleBase {
  private static final Logger log = LoggerFactory.getLogger(ResultStoreVerticle.class);
  private static final SecureRandom RANDOM = new SecureRandom();

  private final String databaseUrl;
  private final int poolSize;
  private final MeterRegistry meters;
  private Pool pool;
  private Pool progressPool;
  private EventBatcher progressEvents;
  private EventBatcher finalEvents;
  private CreateBatcher creates;

  public ResultStoreVerticle(String databaseUrl, int poolSize, MeterRegistry meters) {
    this.databaseUrl = databaseUrl;
    this.poolSize = poolSize;
    this.meters = meters;
  }

  @Override
  public Future<?> start() {
    PgConnectOptions connect = PgConnectOptions.fromUri(databaseUrl).setCachePreparedStatements(true);
    // Beside vertx_pool_in_use{pool_type="sql"}: the pool is exhausted when in use reaches this.
    io.micrometer.core.instrument.Gauge.builder("kernel_runner_database_pool_size", () -> poolSize)
        .description("PostgreSQL connections the pool may open").register(meters);
    return vertx.executeBlocking(() -> {
          migrate(connect);
          return null;
        })
        .compose(v -> {
          pool = PgBuilder.pool()
              .with(new PoolOptions().setMaxSize(poolSize).setMaxWaitQueueSize(10_000))
              .connectingTo(connect)
              .using(vertx)
              .build();
          // Progress events (everything but how a submission ends) commit without waiting for the WAL flush:
          // an fsync per event was most of an event's latency. A database crash can lose the last such
          // events of a run, never a submission, a terminal event or a result (those use the pool above).
          progressPool = PgBuilder.pool()
              .with(new PoolOptions().setMaxSize(1).setMaxWaitQueueSize(10_000).setName("progress"))
              .connectingTo(new PgConnectOptions(connect).addProperty("synchronous_commit", "off"))
              .using(vertx)
              .build();
          // One progress statement at a time: what arrives meanwhile goes in the next, larger one. Fewer,
          // larger statements cost the database less CPU; on the 2-core load benchmark (the database shares
          // the machine) the median event latency went from 9-16 ms with four in flight to 6-8 ms.
          progressEvents = new EventBatcher(progressPool, 1, 2000);
          finalEvents = new EventBatcher(pool, Math.max(1, poolSize / 2), 2000);
          creates = new CreateBatcher(pool, Math.max(1, poolSize / 2), 64);
          return Future.all(List.of(
              consume(Addresses.STORE_PING, body -> pool.query("SELECT 1").execute().map(rs -> new JsonObject())),
              consume(Addresses.STORE_SUBMISSION_CREATE, this::createSubmission),
              consume(Addresses.STORE_SUBMISSION_GET, this::getSubmission),
              consume(Addresses.STORE_SUBMISSION_LIST, this::listSubmissions),
              Bus.<Unfinished.Asked>serve(vertx.eventBus(), Addresses.STORE_SUBMISSION_UNFINISHED,
                  asked -> pool.query(SubmissionSql.UNFINISHED).execute().map(SubmissionSql::found), this::fail),
              Bus.<Unfinished.Asked>serve(vertx.eventBus(), Addresses.STORE_SUBMISSION_VERDICT_PENDING,
                  asked -> pool.query(SubmissionSql.VERDICT_PENDING).execute().map(SubmissionSql::found), this::fail),
              consume(Addresses.STORE_SUBMISSION_SET_RUN, this::setRun),
              consume(Addresses.STORE_SUBMISSION_SET_LOG_OFFSET, body -> pool.preparedQuery(SubmissionSql.SET_LOG_OFFSET)
                  .execute(Tuple.of(parseId(body.getString("submission_id")), body.getInteger("log_offset"),
                      body.getString("log_position")))
                  .map(rows -> new JsonObject().put("updated", rows.rowCount()))),
              Bus.serve(vertx.eventBus(), Addresses.STORE_SUBMISSION_REQUEUE, this::requeue, this::fail),
              Bus.serve(vertx.eventBus(), Addresses.STORE_EVENTS_APPEND, this::appendEvents, this::fail),
              consume(Addresses.STORE_EVENTS_AFTER, this::eventsAfter),
              Bus.serve(vertx.eventBus(), Addresses.STORE_EVENTS_VERIFIED, this::verified, this::fail),
              Bus.serve(vertx.eventBus(), Addresses.STORE_PROFILE_PUT, this::putProfile, this::fail),
              consume(Addresses.STORE_PROFILE_GET, this::getProfile),
              consume(Addresses.STORE_LEADERBOARD, this::leaderboard),
              consume(Addresses.STORE_LEADERBOARDS, body -> pool.preparedQuery(LeaderboardSql.BOARDS)
                  .execute(Tuple.tuple().addString(null).addString(null).addString(null)).map(rows -> {
                JsonArray boards = new JsonArray();
                rows.forEach(row -> boards.add(new JsonObject().put("problem", row.getString("problem"))
                    .put("gpu_type", row.getString("gpu_type")).put("dtype", row.getString("dtype"))
                    .put("entries", row.getLong("entries"))));
                return new JsonObject().put("boards", boards);
              })),
              consume(Addresses.STORE_BEST_SPEEDUPS, body -> pool.preparedQuery(LeaderboardSql.BEST_SPEEDUPS)
                  .execute(Tuple.tuple().addString(null).addString(null).addString(null)
                      .addString(body.getString("user_id"))).map(rows -> {
                JsonArray best = new JsonArray();
                rows.forEach(row -> best.add(new JsonObject().put("gpu_type", row.getString("gpu_type"))
                    .put("problem", row.getString("problem")).put("speedup", row.getDouble("speedup"))
                    .put("eager", row.getDouble("eager")).put("torch_compile", row.getDouble("torch_compile"))));
                return new JsonObject().put("best", best);
              })),
              consume(Addresses.STORE_BASELINES_LOAD, this::loadBaselines),
              consume(Addresses.STORE_BASELINES_UNLOADED_JOBS, body -> pool.query(BaselineSql.UNLOADED_JOBS).execute()
                  .map(rows -> {
                    JsonArray jobs = new JsonArray();
                    rows.forEach(row -> jobs.add(new JsonObject().put("id", row.getUUID("id").toString())
                        .put("gpu_type", row.getString("gpu_type")).put("result", row.getValue("result"))));
                    return new JsonObject().put("jobs", jobs);
                  })),
              consume(Addresses.STORE_BASELINES_CURRENT, body -> pool.preparedQuery(BaselineSql.CURRENT)
                  .execute(Tuple.of(body.getString("gpu_type"), body.getString("problem"), body.getString("dtype")))
                  .map(rows -> {
                    JsonArray baselines = new JsonArray();
                    rows.forEach(row -> baselines.add(new JsonObject().put("gpu_type", row.getString("gpu_type"))
                        .put("problem", row.getString("problem")).put("dtype", row.getString("dtype"))
                        .put("method", row.getString("method")).put("tests", row.getValue("tests"))
                        .put("hardware", row.getValue("hardware")).put("source", row.getString("source"))
                        .put("measured_at", SubmissionSql.text(row.getOffsetDateTime("measured_at")))));
                    return new JsonObject().put("baselines", baselines);
                  })),
              consume(Addresses.STORE_SUBMISSION_MODERATE, this::moderate),
              consume(Addresses.STORE_QUOTA_USAGE, body -> usage(body.getString("user_id"),
                  QuotaUsage.Limits.of(body)).map(usage -> new JsonObject().put("quotas", usage.toJson()).put("refused_by", usage.refusedBy())
                  .put("refusal", usage.refusal()).put("retry_after_seconds", usage.retryAfterSeconds()))),
              consume(Addresses.STORE_TOKEN_CREATE, this::createToken),
              consume(Addresses.STORE_TOKEN_LOOKUP, this::lookupToken),
              consume(Addresses.STORE_TOKEN_LIST, this::listTokens),
              consume(Addresses.STORE_TOKEN_REVOKE, this::revokeToken),
              consume(Addresses.STORE_TOKEN_BIND, this::bindToken),
              consume(Addresses.STORE_TOKEN_BOOTSTRAP_ADMIN, body -> bootstrapAdmin())));
        });
  }

  @Override
  public Future<?> stop() {
    return Future.join(pool == null ? Future.succeededFuture() : pool.close(),
        progressPool == null ? Future.succeededFuture() : progressPool.close());
  }

  private void migrate(PgConnectOptions connect) {
    String jdbc = "jdbc:postgresql://" + connect.getHost() + ":" + connect.getPort() + "/" + connect.getDatabase();
    Flyway.configure()
        .dataSource(jdbc, connect.getUser(), connect.getPassword())
        .locations("classpath:db/migration")
        .load()
        .migrate();
  }

  private Future<Void> consume(String address, Function<JsonObject, Future<?>> handler) {
    return Bus.serve(vertx.eventBus(), address, handler, this::fail);
  }

  /**
   * Errors that mean the database cannot be reached or used right now are 503; other server-side SQL errors
   * are our bugs (500).
   */
  private <T> void fail(Message<T> message, Throwable error) {
    String submission = message.body() instanceof ForSubmission about ? about.submissionId()
        : message.body() instanceof ProfileReport report ? report.submissionId()
        : message.body() instanceof JsonObject body ? body.getString("submission_id", body.getString("id", "-")) : "-";
    fail(message, submission, error);
  }

  private void fail(Message<?> message, String submission, Throwable error) {
    if (error instanceof CodedException) {
      Failures.fail(message, error, log);
    } else if (PgText.dataError(error) || error instanceof IllegalArgumentException) {
      log.error("{} failed for {}: {}", message.address(), submission, error.toString());
      message.fail(Failures.INTERNAL, "database error: " + error.getMessage());
    } else {
      log.warn("{} for {}: database unavailable: {}", message.address(), submission, error.toString());
      message.fail(Failures.UNAVAILABLE, "database unavailable: " + error.getMessage());
    }
  }

  /**
   * Inserts the row and its first IN_QUEUE event, unless the user already has too many unfinished; replies with
   * the first event as an {@link EventFrame} (passed as is, see LocalCodec).
   */
  private Future<EventFrame> createSubmission(JsonObject body) {
    UUID id = UUID.fromString(body.getString("id"));
    String user = body.getString("user_id");
    QuotaUsage.Limits limits = QuotaUsage.Limits.of(body);
    JsonObject firstEvent = new JsonObject().put("position", body.getInteger("position"));
    return creates.create(new CreateBatcher.Create(id, user, body, firstEvent, limits)).compose(createdAt -> {
      if (createdAt == null) { // which quota, and until when, the HTTP edge asks (store.quota.usage) and says
        return Future.failedFuture(new CodedException(Failures.TOO_MANY, "a quota of " + user + " is used up"));
      }
      return Future.succeededFuture(new EventFrame(id.toString(), 1, EventType.IN_QUEUE, createdAt, firstEvent));
    });
  }

  /** Each user's best accepted result for the board, best first, with its tests and their samples. */
  private Future<JsonObject> leaderboard(JsonObject body) {
    return pool.preparedQuery(LeaderboardSql.BOARD)
        .execute(Tuple.of(body.getString("problem"), body.getString("gpu_type"), body.getString("dtype"),
            body.getInteger("limit")))
        .map(rows -> {
          JsonArray candidates = new JsonArray();
          for (Row row : rows) {
            candidates.add(new JsonObject().put("id", row.getUUID("id").toString())
                .put("user_id", row.getString("user_id"))
                .put("created_at", SubmissionSql.text(row.getOffsetDateTime("created_at")))
                .put("speedup", row.getDouble("speedup"))
                .put("tests", row.getValue("tests") instanceof JsonArray tests ? tests : new JsonArray())
                .put("samples", row.getValue("samples") instanceof JsonArray samples ? samples : new JsonArray()));
          }
          return new JsonObject().put("rows", candidates);
        });
  }

  /**
   * A baselines file (remote-agent/selftest/baselines.py): each problem, dtype and method a row, in one
   * transaction; a measurement already stored is skipped; then the newest of each becomes the current one.
   */
  private Future<JsonObject> loadBaselines(JsonObject body) {
    JsonObject file = body.getJsonObject("file");
    java.time.OffsetDateTime measuredAt = java.time.OffsetDateTime.parse(file.getString("measured_at"));
    JsonObject hardware = new JsonObject();
    for (String key : BaselineFile.VERSIONS) {
      if (file.getValue(key) != null) {
        hardware.put(key, file.getValue(key));
      }
    }
    List<Tuple> rows = new java.util.ArrayList<>();
    JsonObject problems = file.getJsonObject("problems");
    for (String problem : problems.fieldNames()) {
      JsonObject dtypes = problems.getJsonObject(problem);
      for (String dtype : dtypes.fieldNames()) {
        JsonObject methods = dtypes.getJsonObject(dtype);
        for (String method : methods.fieldNames()) {
          rows.add(Tuple.of(file.getString("gpu_type"), problem, dtype, method, methods.getJsonObject(method),
              hardware, body.getString("source"), measuredAt));
        }
      }
    }
    return pool.withTransaction(connection -> connection.preparedQuery(BaselineSql.INSERT).executeBatch(rows)
        .compose(inserted -> {
          int count = 0;
          for (var result = inserted; result != null; result = result.next()) {
            count += result.rowCount();
          }
          int total = count;
          return connection.query(BaselineSql.UNMARK_OLDER).execute()
              .compose(v -> connection.query(BaselineSql.MARK_NEWEST).execute())
              .map(v -> new JsonObject().put("inserted", total));
        }));
  }

  private Future<JsonObject> moderate(JsonObject body) {
    UUID id = parseId(body.getString("id"));
    boolean invalidate = body.getBoolean("invalidate", true);
    return (invalidate
        ? pool.preparedQuery(LeaderboardSql.INVALIDATE).execute(Tuple.of(id, body.getString("reason"), body.getString("by")))
        : pool.preparedQuery(LeaderboardSql.RESTORE).execute(Tuple.of(id)))
        .compose(rows -> rows.size() == 0
            ? Future.failedFuture(new CodedException(Failures.NOT_FOUND, "no submission " + id))
            : Future.succeededFuture(new JsonObject().put("id", id.toString())
                .put("invalidated", SubmissionSql.invalidated(rows.iterator().next()))));
  }

  /** What {@code user} has used of each quota, against {@code limits}. */
  private Future<QuotaUsage> usage(String user, QuotaUsage.Limits limits) {
    return pool.preparedQuery(SubmissionSql.USAGE).execute(Tuple.of(user)).map(rows -> {
      Row row = rows.iterator().next();
      return new QuotaUsage(limits, row.getLong("active"), row.getLong("last_hour"), number(row, "hour_frees_in"),
          number(row, "gpu_seconds"), number(row, "day_frees_in"));
    });
  }

  private static Double number(Row row, String column) {
    Object value = row.getValue(column);
    return value instanceof Number n ? n.doubleValue() : null;
  }

  private Future<JsonObject> getSubmission(JsonObject body) {
    UUID id = parseId(body.getString("id"));
    boolean withCode = body.getBoolean("include_code", false);
    String sql = withCode ? SubmissionSql.GET_WITH_CODE : SubmissionSql.GET;
    return pool.preparedQuery(sql).execute(Tuple.of(id))
        .compose(rows -> {
          if (rows.size() == 0) {
            return Future.failedFuture(new CodedException(Failures.NOT_FOUND, "no submission " + id));
          }
          JsonObject submission = SubmissionSql.toJson(rows.iterator().next());
          if (!body.getBoolean("include_results", false)) {
            return Future.succeededFuture(submission);
          }
          return pool.preparedQuery(EventSql.RESULTS).execute(Tuple.of(id)).map(results -> {
            Map<EventType, JsonArray> byType = new EnumMap<>(Map.of(EventType.TEST_RESULT, new JsonArray(),
                EventType.BENCHMARK_RESULT, new JsonArray(), EventType.PROFILE_RESULT, new JsonArray()));
            for (Row row : results) {
              JsonObject payload = row.getJsonObject("payload");
              byType.get(EventType.valueOf(row.getString("type"))).add(payload.getJsonObject("result", payload));
            }
            return submission.put("test_results", byType.get(EventType.TEST_RESULT))
                .put("benchmark_results", byType.get(EventType.BENCHMARK_RESULT))
                .put("profile_results", byType.get(EventType.PROFILE_RESULT));
          });
        });
  }

  private Future<JsonObject> listSubmissions(JsonObject body) {
    String at = body.getString("before_created_at");
    String id = body.getString("before_id");
    UUID before;
    OffsetDateTime beforeAt;
    try {
      before = id == null ? null : UUID.fromString(id);
      beforeAt = at == null ? null : OffsetDateTime.parse(at);
    } catch (RuntimeException e) {
      return Future.failedFuture(new CodedException(Failures.BAD_REQUEST, "not a page cursor: " + e.getMessage()));
    }
    Tuple args = Tuple.of(body.getString("user_id"), beforeAt, before, body.getInteger("limit", 50),
        body.getString("problem"), body.getString("gpu_type"));
    return pool.preparedQuery(SubmissionSql.LIST).execute(args)
        .map(rows -> new JsonObject().put("submissions", SubmissionSql.toJson(rows)));
  }

  private Future<JsonObject> listTokens(JsonObject body) {
    String at = body.getString("before_created_at");
    Tuple args = Tuple.of(at == null ? null : OffsetDateTime.parse(at), body.getString("before_id"),
        body.getInteger("limit", 50));
    return pool.preparedQuery(TokenSql.LIST).execute(args)
        .map(rows -> new JsonObject().put("tokens", TokenSql.toJson(rows)));
  }

  /**
   * Revokes a live token by its id (replies with its user, or fails 404), or with {@code user_id} and {@code role}
   * every live token of that user and role (replies how many).
   */
  private Future<JsonObject> revokeToken(JsonObject body) {
    String id = body.getString("id");
    if (id == null) {
      return pool.preparedQuery(TokenSql.REVOKE_USER)
          .execute(Tuple.of(body.getString("user_id"), body.getString("role")))
          .map(rows -> revoked(rows, new JsonObject().put("revoked", rows.rowCount())));
    }
    return pool.preparedQuery(TokenSql.REVOKE).execute(Tuple.of(id)).compose(rows -> rows.size() == 0
        ? Future.failedFuture(new CodedException(Failures.NOT_FOUND, "no live token " + id))
        : Future.succeededFuture(revoked(rows, new JsonObject().put("user_id",
            rows.iterator().next().getString("user_id")))));
  }

  /**
   * Whoever revoked, the HTTP edge's cache of known tokens holds none of them from now on, and what is still open
   * with one (a worker's job stream) is told ({@code tokens.revoked}: their ids).
   */
  private JsonObject revoked(RowSet<Row> rows, JsonObject reply) {
    new Revocations(vertx).count();
    JsonArray ids = new JsonArray();
    rows.forEach(row -> ids.add(row.getString("id")));
    if (!ids.isEmpty()) {
      vertx.eventBus().publish(Addresses.TOKENS_REVOKED, new JsonObject().put("ids", ids));
    }
    return reply;
  }

  private Future<JsonObject> setRun(JsonObject body) {
    return pool.preparedQuery(SubmissionSql.SET_RUN).execute(Tuple.of(parseId(body.getString("submission_id")),
            body.getString("backend"), body.getString("node"), body.getInteger("pid"), body.getString("run_name"),
            body.getString("event_key")))
        .map(rows -> new JsonObject().put("updated", rows.rowCount()));
  }

  /** A re-queue: the IN_QUEUE event that puts the submission back in line and the restart it counts, together. */
  private Future<EventFrame> requeue(EventWrite write) {
    UUID id = parseId(write.submissionId());
    NewEvent event = write.event();
    Tuple args = Tuple.from(new ArrayList<>(java.util.Arrays.asList(id, event.type().name(),
        event.type().changesStatus(), event.terminal(), new JsonObject(PgText.json(event.payload())), event.result(),
        event.error(), event.cancelledBy(), event.cancelReason())));
    return pool.withTransaction(conn -> conn.preparedQuery(SubmissionSql.COUNT_RESTART).execute(Tuple.of(id))
        .compose(v -> conn.preparedQuery(EventSql.APPEND).execute(args)).compose(rows -> {
          if (rows.size() == 0) {
            return Future.failedFuture(new CodedException(Failures.CONFLICT,
                "submission " + write.submissionId() + " has finished"));
          }
          Row row = rows.iterator().next();
          return Future.succeededFuture(new EventFrame(write.submissionId(), row.getInteger("seq"), event.type(),
              row.getOffsetDateTime("created_at"), event.fields()));
        }));
  }

  /** A pending BENCHMARKED's timing verdict: the VERIFIED event, and the stored result updated with it. */
  private Future<EventFrame> verified(EventWrite write) {
    String id = write.submissionId();
    JsonObject fields = write.event().fields();
    JsonObject timing = fields.getJsonObject("timing", new JsonObject());
    return pool.preparedQuery(EventSql.APPEND_VERDICT).execute(Tuple.of(parseId(id),
            new JsonObject(PgText.json(fields.encode())), timing, "unverified".equals(timing.getString("status"))))
        .compose(rows -> {
          if (rows.size() == 0) {
            return Future.failedFuture(new CodedException(Failures.CONFLICT,
                "submission " + id + " has no timing verdict pending"));
          }
          Row row = rows.iterator().next();
          return Future.succeededFuture(new EventFrame(id, row.getInteger("seq"), EventType.VERIFIED,
              row.getOffsetDateTime("created_at"), fields));
        });
  }

  /** A submission's events, in order, written with whatever else waits (see {@link EventBatcher}). */
  private Future<EventAppend.Stored> appendEvents(EventAppend append) {
    UUID id = parseId(append.submissionId());
    boolean progressOnly = append.events().stream().allMatch(NewEvent::progressOnly);
    return (progressOnly ? progressEvents : finalEvents).append(id, append.events()).map(EventAppend.Stored::new);
  }

  private Future<JsonObject> putProfile(ProfileReport report) {
    return pool.preparedQuery(ProfileSql.PUT).execute(Tuple.of(parseId(report.submissionId()), report.fileName(),
        report.sha256(), Buffer.buffer(report.content()))).map(rows -> new JsonObject());
  }

  private Future<ProfileReport> getProfile(JsonObject body) {
    String id = body.getString("submission_id");
    return pool.preparedQuery(ProfileSql.GET).execute(Tuple.of(parseId(id))).compose(rows -> {
      if (rows.size() == 0) {
        return Future.failedFuture(new CodedException(Failures.NOT_FOUND, "submission " + id + " has no profile"));
      }
      Row row = rows.iterator().next();
      return Future.succeededFuture(new ProfileReport(id, row.getString("file_name"), row.getString("sha256"),
          row.getBuffer("content").getBytes()));
    });
  }

  private Future<JsonObject> eventsAfter(JsonObject body) {
    UUID id = parseId(body.getString("submission_id"));
    return pool.preparedQuery(EventSql.AFTER).execute(Tuple.of(id, body.getInteger("after_seq", 0))).map(rows -> {
      JsonArray events = new JsonArray();
      rows.forEach(row -> events.add(EventSql.toFrame(row).toJson()));
      return new JsonObject().put("events", events);
    });
  }

  private Future<JsonObject> createToken(JsonObject body) {
    String token = newToken();
    JsonArray types = body.getJsonArray("gpu_types");
    Tuple args = Tuple.of(hash(token), body.getString("user_id"), body.getString("role"), body.getString("created_by"),
        body.getString("pool"), types == null ? null : types.stream().map(String::valueOf).toArray(String[]::new),
        body.getBoolean("trusted", false));
    return pool.preparedQuery(TokenSql.INSERT).execute(args)
        .map(v -> new JsonObject().put("token", token).put("id", hash(token).substring(0, 16)));
  }

  private Future<JsonObject> lookupToken(JsonObject body) {
    return pool.preparedQuery(TokenSql.LOOKUP).execute(Tuple.of(hash(body.getString("token")))).compose(rows -> {
      if (rows.size() == 0) {
        return Future.failedFuture(new CodedException(Failures.NOT_FOUND, "unknown token"));
      }
      Row row = rows.iterator().next();
      JsonObject token = new JsonObject().put("id", row.getString("id")).put("user_id", row.getString("user_id"))
          .put("role", row.getString("role"));
      return Future.succeededFuture(!"worker".equals(row.getString("role")) ? token
          : token.mergeIn(TokenSql.pool(row)).put("machine_key", row.getString("machine_key")));
    });
  }

  /**
   * Binds a worker token to a machine key ({@code id}, {@code machine_key}; 409 when bound to another), or with
   * {@code machine_key} null frees it (404 when no such live worker token). Either way the HTTP edge looks its
   * tokens up again (its cached ones hold the old binding).
   */
  private Future<JsonObject> bindToken(JsonObject body) {
    String id = body.getString("id");
    String key = body.getString("machine_key");
    if (key == null) {
      return pool.preparedQuery(TokenSql.UNBIND).execute(Tuple.of(id)).compose(rows -> {
        new Revocations(vertx).count();
        return rows.size() == 0 ? Future.failedFuture(new CodedException(Failures.NOT_FOUND, "no live worker token " + id))
            : Future.succeededFuture(new JsonObject().put("id", id).put("machine", (Object) null));
      });
    }
    return pool.preparedQuery(TokenSql.BIND).execute(Tuple.of(id, key)).compose(rows -> {
      new Revocations(vertx).count();
      if (rows.size() == 0) {
        return Future.failedFuture(new CodedException(Failures.CONFLICT,
            "this token is bound to another machine; an admin can free it (DELETE /api/admin/tokens/" + id
                + "/machine)"));
      }
      return Future.succeededFuture(new JsonObject().put("bound_at",
          SubmissionSql.text(rows.iterator().next().getOffsetDateTime("machine_bound_at"))));
    });
  }

  /** Creates the first admin token if no admin token exists; replies with it (once) or with nothing. */
  private Future<JsonObject> bootstrapAdmin() {
    String token = newToken();
    return pool.preparedQuery(TokenSql.INSERT_FIRST_ADMIN).execute(Tuple.of(hash(token)))
        .map(rows -> rows.rowCount() == 1 ? new JsonObject().put("token", token) : new JsonObject());
  }

  private static UUID parseId(String id) {
    try {
      return UUID.fromString(id);
    } catch (RuntimeException e) {
      throw new CodedException(Failures.NOT_FOUND, "no submission " + id);
    }
  }

  private static String newToken() {
    byte[] bytes = new byte[32];
    RANDOM.nextBytes(bytes);
    return "kr_" + Base64.getUrlEncoder().withoutPadding().encodeToString(bytes);
  }

  static String hash(String token) {
    try {
      byte[] digest = MessageDigest.getInstance("SHA-256").digest(token.getBytes(StandardCharsets.UTF_8));
      return HexFormat.of().formatHex(digest);
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }
}
