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
        RETURNING id, last_seq, updated_at)
      INSERT INTO submission_events (submission_id, seq, type, payload, created_at)
      SELECT id, last_seq, $2, $5, updated_at FROM s
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
