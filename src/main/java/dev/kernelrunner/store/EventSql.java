package dev.kernelrunner.store;

import dev.kernelrunner.model.EventFrame;
import dev.kernelrunner.model.EventType;
import io.vertx.sqlclient.Row;

/** Every statement on {@code submission_events}. */
final class EventSql {
  private EventSql() {}

  static final String INSERT_FIRST = """
      INSERT INTO submission_events (submission_id, seq, type, payload, created_at)
      VALUES ($1, 1, 'IN_QUEUE', $2, now()) RETURNING created_at""";

  /**
   * Takes the next sequence number, moves the submission's status and stores the event, in one statement.
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
        RETURNING id, last_seq, updated_at, user_id),
      freed AS (
        UPDATE user_quota SET active = GREATEST(active - 1, 0) FROM s WHERE $4 AND user_quota.user_id = s.user_id)
      INSERT INTO submission_events (submission_id, seq, type, payload, created_at)
      SELECT id, last_seq, $2, $5, updated_at FROM s
      RETURNING seq, created_at""";

  /**
   * {@link #APPEND} for many submissions at once (at most one event each): parallel arrays $1 ids, $2 types,
   * $3 changes status, $4 terminal, $5 payloads, $6 results, $7 errors (JSON text), $8 cancelled_by,
   * $9 cancel_reason. One statement, one commit, for every event that arrived while the previous batch ran.
   */
  static final String APPEND_BATCH = """
      WITH b AS (
        SELECT * FROM unnest($1::uuid[], $2::text[], $3::bool[], $4::bool[], $5::text[], $6::text[], $7::text[],
                             $8::text[], $9::text[])
          AS b(id, type, changes_status, terminal, payload, result, error, cancelled_by, cancel_reason)),
      s AS (
        UPDATE submissions
           SET last_seq = submissions.last_seq + 1,
               status = CASE WHEN b.changes_status THEN b.type ELSE submissions.status END,
               updated_at = clock_timestamp(),
               started_at = CASE WHEN b.type = 'PROVISIONING' AND submissions.started_at IS NULL
                                 THEN clock_timestamp() ELSE submissions.started_at END,
               finished_at = CASE WHEN b.terminal THEN clock_timestamp() ELSE submissions.finished_at END,
               result = COALESCE(b.result::jsonb, submissions.result),
               error = COALESCE(b.error::jsonb, submissions.error),
               cancelled_by = COALESCE(b.cancelled_by, submissions.cancelled_by),
               cancel_reason = COALESCE(b.cancel_reason, submissions.cancel_reason)
          FROM b
         WHERE submissions.id = b.id AND submissions.finished_at IS NULL
        RETURNING submissions.id, submissions.last_seq, submissions.updated_at, submissions.user_id, b.type,
                  b.payload, b.terminal),
      freed AS (
        UPDATE user_quota SET active = GREATEST(active - n.finished, 0)
          FROM (SELECT user_id, count(*) AS finished FROM s WHERE terminal GROUP BY user_id) n
         WHERE user_quota.user_id = n.user_id)
      INSERT INTO submission_events (submission_id, seq, type, payload, created_at)
      SELECT id, last_seq, type, payload::jsonb, updated_at FROM s
      RETURNING submission_id, seq, created_at""";

  /**
   * Several events of one submission, in order, in one statement: $1 id, $2 types, $3 payloads (JSON text),
   * $4 how many, $5 the status after them (null: unchanged), $6 one is PROVISIONING, $7 the last ends it,
   * $8 result, $9 error, $10 cancelled_by, $11 cancel_reason. Seqs follow on from last_seq.
   */
  static final String APPEND_GROUP = """
      WITH ev AS (
        SELECT e.type, e.payload, e.ord FROM unnest($2::text[], $3::text[]) WITH ORDINALITY AS e(type, payload, ord)),
      s AS (
        UPDATE submissions
           SET last_seq = last_seq + $4,
               status = COALESCE($5, status),
               updated_at = clock_timestamp(),
               started_at = CASE WHEN $6 AND started_at IS NULL THEN clock_timestamp() ELSE started_at END,
               finished_at = CASE WHEN $7 THEN clock_timestamp() ELSE finished_at END,
               result = COALESCE($8, result),
               error = COALESCE($9, error),
               cancelled_by = COALESCE($10, cancelled_by),
               cancel_reason = COALESCE($11, cancel_reason)
         WHERE id = $1 AND finished_at IS NULL
        RETURNING id, last_seq - $4 AS base, updated_at, user_id),
      freed AS (
        UPDATE user_quota SET active = GREATEST(active - 1, 0) FROM s WHERE $7 AND user_quota.user_id = s.user_id)
      INSERT INTO submission_events (submission_id, seq, type, payload, created_at)
      SELECT s.id, s.base + ev.ord, ev.type, ev.payload::jsonb, s.updated_at FROM s, ev
      RETURNING seq, created_at""";

  static final String AFTER = """
      SELECT submission_id, seq, type, payload, created_at FROM submission_events
       WHERE submission_id = $1 AND seq > $2 ORDER BY seq""";

  static final String RESULTS = """
      SELECT submission_id, seq, type, payload, created_at FROM submission_events
       WHERE submission_id = $1 AND type IN ('TEST_RESULT', 'BENCHMARK_RESULT') ORDER BY seq""";

  static EventFrame toFrame(Row row) {
    return new EventFrame(row.getUUID("submission_id").toString(), row.getInteger("seq"),
        EventType.valueOf(row.getString("type")), row.getOffsetDateTime("created_at"), row.getJsonObject("payload"));
  }
}
