package dev.kernelrunner.store;

import dev.kernelrunner.model.Mode;

import dev.kernelrunner.model.EventType;

import dev.kernelrunner.model.Unfinished;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.sqlclient.Row;
import java.time.OffsetDateTime;

/** Every statement on {@code submissions}, and its row mapping. */
final class SubmissionSql {
  private SubmissionSql() {}

  /** The user's hour window has run out (or never began): the next submission starts a new one. */
  private static final String HOUR_OVER = "(q.hour_start IS NULL OR q.hour_start <= now() - interval '1 hour')";

  /**
   * Creates many submissions in one statement (one round trip, one commit), each with its first IN_QUEUE event,
   * unless its user already has as many unfinished as its limit (then it is left out of the result): the
   * user's quota row is taken (ON CONFLICT locks it and re-checks the limit against its latest version, so
   * concurrent creates of one user cannot both pass, and the hour's count and the day's GPU-seconds on it are
   * exact), in user order: two statements that lock the same users'
   * rows in different orders deadlock (seen in CI: 40P01 under 64 concurrent creates). Per submission: id, user (distinct within a call: a
   * quota row is taken once per statement), problem, language, GPU type, dtype, mode, code,
   * cancel_on_disconnect, the first event's payload (JSON text), the user's limit. Returns the created ids with
   * their time.
   */
  static final String CREATE_BATCH = """
      WITH req AS (
             SELECT * FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[],
                                  $8::text[], $9::bool[], $10::text[], $11::int[], $12::int[], $13::int[])
               AS r(id, user_id, problem, language, gpu_type, dtype, mode, code, cancel_on_disconnect, payload,
                    max_active, per_hour, gpu_seconds)),
           quota AS (
             INSERT INTO user_quota AS q (user_id, active, hour_start, hour_count)
             SELECT user_id, 1, now(), 1 FROM req ORDER BY user_id
             ON CONFLICT (user_id) DO UPDATE SET active = q.active + 1,
                    hour_start = CASE WHEN """ + HOUR_OVER + """
       THEN now() ELSE q.hour_start END,
                    hour_count = CASE WHEN """ + HOUR_OVER + """
       THEN 1 ELSE q.hour_count + 1 END
              WHERE (SELECT q.active < r.max_active
                            AND (r.per_hour = 0 OR """ + HOUR_OVER + """
       OR q.hour_count < r.per_hour)
                            AND (r.gpu_seconds = 0 OR q.day_start IS NULL OR q.day_start <= now() - interval '1 day'
                                 OR q.day_gpu_seconds < r.gpu_seconds)
                       FROM req r WHERE r.user_id = q.user_id)
             RETURNING user_id),
           created AS (
             INSERT INTO submissions (id, user_id, problem, language, gpu_type, dtype, mode, code, status, last_seq,
                                      cancel_on_disconnect)
             SELECT r.id, r.user_id, r.problem, r.language, r.gpu_type, r.dtype, r.mode, r.code, 'IN_QUEUE', 1,
                    r.cancel_on_disconnect
               FROM req r JOIN quota USING (user_id)
             RETURNING id)
      INSERT INTO submission_events (submission_id, seq, type, payload, created_at)
      SELECT c.id, 1, 'IN_QUEUE', r.payload::jsonb, now() FROM created c JOIN req r ON r.id = c.id
      RETURNING submission_id, created_at""";

  /**
   * What {@code $1} has used of each quota: unfinished submissions; submissions in the current hour window and
   * seconds until it ends; GPU-seconds of runs that ended in the current day window and seconds until it ends
   * (no row: nothing used).
   */
  static final String USAGE = """
      SELECT COALESCE(max(active), 0) AS active,
             COALESCE(max(CASE WHEN hour_start > now() - interval '1 hour' THEN hour_count END), 0) AS last_hour,
             max(CASE WHEN hour_start > now() - interval '1 hour'
                      THEN extract(epoch FROM hour_start + interval '1 hour' - now()) END) AS hour_frees_in,
             COALESCE(max(CASE WHEN day_start > now() - interval '1 day' THEN day_gpu_seconds END), 0) AS gpu_seconds,
             max(CASE WHEN day_start > now() - interval '1 day'
                      THEN extract(epoch FROM day_start + interval '1 day' - now()) END) AS day_frees_in
        FROM user_quota WHERE user_id = $1""";

  private static final String COLUMNS = """
      id, user_id, problem, language, gpu_type, dtype, mode, status, last_seq, cancel_on_disconnect, backend,
      node, pid, run_name, log_offset, log_position, event_key, restart_count, result, error, cancelled_by, cancel_reason, created_at, started_at,
      updated_at, finished_at, invalidated_at, invalidated_by, invalidated_reason""";

  static final String GET = "SELECT " + COLUMNS + " FROM submissions WHERE id = $1";

  static final String GET_WITH_CODE = "SELECT " + COLUMNS + ", code FROM submissions WHERE id = $1";

  /**
   * Newest first; {@code $1} user (null: everyone's); {@code $2}, {@code $3}: the cursor, the (created_at, id) of
   * the last row of the previous page (null: from the newest). Unique even when a batch shares a created_at.
   * {@code $5}, {@code $6}: only this problem, this GPU type (null: any).
   */
  static final String LIST = "SELECT " + COLUMNS + """
       FROM submissions
      WHERE ($1::text IS NULL OR user_id = $1)
        AND ($2::timestamptz IS NULL OR (created_at, id) < ($2, $3::uuid))
        AND ($5::text IS NULL OR problem = $5) AND ($6::text IS NULL OR gpu_type = $6)
      ORDER BY created_at DESC, id DESC
      LIMIT $4""";

  static final String UNFINISHED = "SELECT " + COLUMNS + " FROM submissions WHERE finished_at IS NULL ORDER BY created_at, id";

  /** Ended BENCHMARKED with the timing verdict still to come (as {@code EventSql.APPEND_VERDICT} awaits it). */
  static final String VERDICT_PENDING = "SELECT " + COLUMNS + """
       FROM submissions WHERE status = 'BENCHMARKED' AND result #>> '{verification,timing,status}' = 'pending'
      ORDER BY created_at, id""";

  static final String SET_RUN = """
      UPDATE submissions SET backend = $2, node = $3, pid = $4, run_name = $5, event_key = $6 WHERE id = $1""";

  /** Where a re-attached follower resumes the run's log; only ever moves forward. */
  static final String SET_LOG_OFFSET = """
      UPDATE submissions SET log_offset = $2, log_position = $3 WHERE id = $1 AND log_offset < $2 AND finished_at IS NULL""";

  static final String COUNT_RESTART = """
      UPDATE submissions SET restart_count = restart_count + 1, pid = NULL, node = NULL, run_name = NULL,
             log_offset = 0, log_position = NULL, event_key = NULL
       WHERE id = $1 AND finished_at IS NULL""";

  static JsonObject toJson(Row row) {
    JsonObject json = new JsonObject()
        .put("id", row.getUUID("id").toString())
        .put("user_id", row.getString("user_id"))
        .put("problem", row.getString("problem"))
        .put("language", row.getString("language"))
        .put("gpu_type", row.getString("gpu_type"))
        .put("dtype", row.getString("dtype"))
        .put("mode", row.getString("mode"))
        .put("status", row.getString("status"))
        .put("last_seq", row.getInteger("last_seq"))
        .put("cancel_on_disconnect", row.getBoolean("cancel_on_disconnect"))
        .put("backend", row.getString("backend"))
        .put("node", row.getString("node"))
        .put("pid", row.getInteger("pid"))
        .put("run_name", row.getString("run_name"))
        .put("log_offset", row.getInteger("log_offset"))
        .put("log_position", row.getString("log_position"))
        .put("event_key", row.getString("event_key"))
        .put("restart_count", row.getInteger("restart_count"))
        .put("result", row.getJsonObject("result"))
        .put("error", row.getJsonObject("error"))
        .put("cancelled_by", row.getString("cancelled_by"))
        .put("cancel_reason", row.getString("cancel_reason"))
        .put("created_at", text(row.getOffsetDateTime("created_at")))
        .put("started_at", text(row.getOffsetDateTime("started_at")))
        .put("updated_at", text(row.getOffsetDateTime("updated_at")))
        .put("finished_at", text(row.getOffsetDateTime("finished_at")))
        .put("invalidated", invalidated(row));
    if (row.getColumnIndex("code") >= 0) {
      json.put("code", row.getString("code"));
    }
    return json;
  }

  /** {@link #UNFINISHED}'s or {@link #VERDICT_PENDING}'s rows, as a start needs them. */
  static Unfinished found(Iterable<Row> rows) {
    java.util.List<Unfinished.Found> found = new java.util.ArrayList<>();
    for (Row row : rows) {
      Integer offset = row.getInteger("log_offset");
      Integer restarts = row.getInteger("restart_count");
      found.add(new Unfinished.Found(row.getUUID("id").toString(), row.getString("user_id"),
          row.getString("gpu_type"), EventType.valueOf(row.getString("status")),
          Mode.parse(row.getString("mode")).orElse(Mode.BENCHMARK),
          Boolean.TRUE.equals(row.getBoolean("cancel_on_disconnect")), restarts == null ? 0 : restarts,
          row.getString("backend"), row.getInteger("pid"), row.getString("run_name"), offset == null ? 0 : offset,
          row.getString("log_position"), row.getString("event_key")));
    }
    return new Unfinished(found);
  }

  static JsonArray toJson(Iterable<Row> rows) {
    JsonArray array = new JsonArray();
    rows.forEach(row -> array.add(toJson(row)));
    return array;
  }

  /** Why an admin took the result off the leaderboards (null: it was not). */
  static JsonObject invalidated(Row row) {
    OffsetDateTime at = row.getOffsetDateTime("invalidated_at");
    return at == null ? null : new JsonObject().put("reason", row.getString("invalidated_reason"))
        .put("by", row.getString("invalidated_by")).put("at", text(at));
  }

  /** A timestamp as the API shows it (ISO-8601), null as null. */
  /** RFC 3339, seconds always written (OffsetDateTime.toString leaves out zero seconds: "12:00Z" is no date-time). */
  static String text(OffsetDateTime time) {
    return time == null ? null : time.format(java.time.format.DateTimeFormatter.ISO_OFFSET_DATE_TIME);
  }
}
