package dev.kernelrunner.store;

import dev.kernelrunner.model.EventFrame;
import dev.kernelrunner.model.EventType;
import io.vertx.sqlclient.Row;

/** Every statement on {@code submission_events}. */
final class EventSql {
  private EventSql() {}

  /** The user's GPU-seconds day has run out (or never began): a run that ends now starts a new one. */
  private static final String DAY_OVER =
      "CASE WHEN user_quota.day_start IS NULL OR user_quota.day_start <= now() - interval '1 day'";

  static final String INSERT_FIRST = """
      INSERT INTO submission_events (submission_id, seq, type, payload, created_at)
      VALUES ($1, 1, 'IN_QUEUE', $2, now()) RETURNING created_at""";

  /**
   * Takes the next sequence number, moves the submission's status and stores the event, in one statement.
   * A run that ends adds the seconds from its start (PROVISIONING) to its end to its user's day of GPU-seconds.
   * Nothing is stored once the submission has finished. $1 id, $2 type, $3 changes status, $4 terminal,
   * $5 payload, $6 result, $7 error, $8 cancelled_by, $9 cancel_reason.
   */
  static final String APPEND = """
      WITH s AS (
        UPDATE submissions
           SET last_seq = last_seq + 1,
               status = CASE WHEN $3 THEN $2 ELSE status END,
               updated_at = clock_timestamp(),
               started_at = CASE WHEN $2 = 'PROVISIONING' AND started_at IS NULL THEN clock_timestamp() ELSE started_at END,
               finished_at = CASE WHEN $4 THEN clock_timestamp() ELSE finished_at END,
               result = COALESCE($6, result),
               error = COALESCE($7, error),
               cancelled_by = COALESCE($8, cancelled_by),
               cancel_reason = COALESCE($9, cancel_reason)
         WHERE id = $1 AND finished_at IS NULL
        RETURNING id, last_seq, updated_at, user_id, started_at),
      freed AS (
        UPDATE user_quota SET active = GREATEST(active - 1, 0),
               day_gpu_seconds = """ + DAY_OVER + """
       THEN 0 ELSE day_gpu_seconds END
                                 + COALESCE(extract(epoch FROM s.updated_at - s.started_at), 0),
               day_start = """ + DAY_OVER + """
       THEN now() ELSE day_start END
          FROM s WHERE $4 AND user_quota.user_id = s.user_id)
      INSERT INTO submission_events (submission_id, seq, type, payload, created_at)
      SELECT id, last_seq, $2, $5, updated_at FROM s
      RETURNING seq, created_at""";

  /**
   * The events of many submissions in one statement (one round trip, one commit): per submission ($1 ids) how
   * many events ($2), the status after them ($3, null: unchanged), whether one is PROVISIONING ($4), whether
   * the last ends it ($5), result, error (JSON text), cancelled_by, cancel_reason ($6-$9); then per event its
   * submission ($10), position in its group from 1 ($11), type ($12) and payload (JSON text, $13). Returns a
   * row per submission written: its id, the seq before the group ({@code base}; the events get base + 1...)
   * and their time. A submission that has finished is not written and not returned.
   */
  static final String APPEND_BATCH = """
      WITH g AS (
        SELECT * FROM unnest($1::uuid[], $2::int[], $3::text[], $4::bool[], $5::bool[], $6::text[], $7::text[],
                             $8::text[], $9::text[])
          AS g(id, n, status, provisioning, terminal, result, error, cancelled_by, cancel_reason)),
      e AS (
        SELECT * FROM unnest($10::uuid[], $11::int[], $12::text[], $13::text[]) AS e(id, ord, type, payload)),
      s AS (
        UPDATE submissions
           SET last_seq = submissions.last_seq + g.n,
               status = COALESCE(g.status, submissions.status),
               updated_at = clock_timestamp(),
               started_at = CASE WHEN g.provisioning AND submissions.started_at IS NULL
                                 THEN clock_timestamp() ELSE submissions.started_at END,
               finished_at = CASE WHEN g.terminal THEN clock_timestamp() ELSE submissions.finished_at END,
               result = COALESCE(g.result::jsonb, submissions.result),
               error = COALESCE(g.error::jsonb, submissions.error),
               cancelled_by = COALESCE(g.cancelled_by, submissions.cancelled_by),
               cancel_reason = COALESCE(g.cancel_reason, submissions.cancel_reason)
          FROM g
         WHERE submissions.id = g.id AND submissions.finished_at IS NULL
        RETURNING submissions.id, submissions.last_seq - g.n AS base, submissions.updated_at, submissions.user_id,
                  g.terminal, submissions.started_at),
      freed AS (
        UPDATE user_quota SET active = GREATEST(active - n.finished, 0),
               day_gpu_seconds = """ + DAY_OVER + """
       THEN 0 ELSE day_gpu_seconds END + n.seconds,
               day_start = """ + DAY_OVER + """
       THEN now() ELSE day_start END
          FROM (SELECT user_id, count(*) AS finished,
                       COALESCE(sum(extract(epoch FROM updated_at - started_at)), 0) AS seconds
                  FROM s WHERE terminal GROUP BY user_id) n
         WHERE user_quota.user_id = n.user_id),
      stored AS (
        INSERT INTO submission_events (submission_id, seq, type, payload, created_at)
        SELECT s.id, s.base + e.ord, e.type, e.payload::jsonb, s.updated_at FROM s JOIN e ON e.id = s.id)
      SELECT id, base, updated_at FROM s""";

  /**
   * VERIFIED, the one event after an end: the timing verdict of a BENCHMARKED whose times were pending goes into
   * its stored result ($3: the verification's timing, $4: whether the times are unverified); only while pending,
   * so it is stored once. $1 id, $2 payload.
   */
  static final String APPEND_VERDICT = """
      WITH s AS (
        UPDATE submissions
           SET last_seq = last_seq + 1,
               updated_at = clock_timestamp(),
               result = jsonb_set(jsonb_set(result, '{verification,timing}', $3::jsonb), '{unverified}',
                                  to_jsonb($4::boolean))
         WHERE id = $1 AND status = 'BENCHMARKED' AND result #>> '{verification,timing,status}' = 'pending'
        RETURNING id, last_seq, updated_at)
      INSERT INTO submission_events (submission_id, seq, type, payload, created_at)
      SELECT id, last_seq, 'VERIFIED', $2, updated_at FROM s
      RETURNING seq, created_at""";

  static final String AFTER = """
      SELECT submission_id, seq, type, payload, created_at FROM submission_events
       WHERE submission_id = $1 AND seq > $2 ORDER BY seq""";

  static final String RESULTS = """
      SELECT submission_id, seq, type, payload, created_at FROM submission_events
       WHERE submission_id = $1 AND type IN ('TEST_RESULT', 'BENCHMARK_RESULT', 'PROFILE_RESULT') ORDER BY seq""";

  static EventFrame toFrame(Row row) {
    return new EventFrame(row.getUUID("submission_id").toString(), row.getInteger("seq"),
        EventType.valueOf(row.getString("type")), row.getOffsetDateTime("created_at"), row.getJsonObject("payload"));
  }
}
