package dev.kernelrunner.store;

import dev.kernelrunner.bus.Failures;
import dev.kernelrunner.bus.Failures.CodedException;
import dev.kernelrunner.model.EventFrame;
import dev.kernelrunner.model.EventType;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.json.JsonObject;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.Tuple;
import java.time.OffsetDateTime;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;

/**
 * Writes events in batches: whatever arrived while the previous statements ran goes out as one
 * {@link EventSql#APPEND_BATCH} (one round trip, one commit), so the database keeps up with hundreds of
 * running submissions. No wait is added: an event that finds a free connection is written at once. A batch
 * holds at most one event per submission (the tracker sends a submission's events one at a time anyway).
 */
final class EventBatcher {
  private record Pending(JsonObject body, Promise<JsonObject> promise) {}

  private final Pool pool;
  private final int maxInFlight;
  private final int maxBatch;
  private final ArrayDeque<Pending> queue = new ArrayDeque<>();
  private int inFlight;

  EventBatcher(Pool pool, int maxInFlight, int maxBatch) {
    this.pool = pool;
    this.maxInFlight = maxInFlight;
    this.maxBatch = maxBatch;
  }

  /** Stores the event ({@code submission_id, type, fields, terminal, result, error, cancelled_by, cancel_reason}). */
  Future<JsonObject> append(JsonObject body) {
    Promise<JsonObject> promise = Promise.promise();
    queue.add(new Pending(body, promise));
    flush();
    return promise.future();
  }

  private void flush() {
    while (inFlight < maxInFlight && !queue.isEmpty()) {
      List<Pending> batch = new ArrayList<>();
      Set<String> ids = new HashSet<>();
      Iterator<Pending> it = queue.iterator();
      while (it.hasNext() && batch.size() < maxBatch) {
        Pending pending = it.next();
        if (ids.add(pending.body().getString("submission_id"))) {
          batch.add(pending);
          it.remove();
        }
      }
      write(batch);
    }
  }

  private void write(List<Pending> batch) {
    int n = batch.size();
    UUID[] ids = new UUID[n];
    String[] types = new String[n];
    Boolean[] changes = new Boolean[n];
    Boolean[] terminal = new Boolean[n];
    String[] payloads = new String[n];
    String[] results = new String[n];
    String[] errors = new String[n];
    String[] cancelledBy = new String[n];
    String[] cancelReasons = new String[n];
    try {
      for (int i = 0; i < n; i++) {
        JsonObject body = batch.get(i).body();
        EventType type = EventType.valueOf(body.getString("type"));
        ids[i] = UUID.fromString(body.getString("submission_id"));
        types[i] = type.name();
        changes[i] = type.changesStatus();
        terminal[i] = body.getBoolean("terminal", false);
        payloads[i] = body.getJsonObject("fields", new JsonObject()).encode();
        results[i] = body.getJsonObject("result") == null ? null : body.getJsonObject("result").encode();
        errors[i] = body.getJsonObject("error") == null ? null : body.getJsonObject("error").encode();
        cancelledBy[i] = body.getString("cancelled_by");
        cancelReasons[i] = body.getString("cancel_reason");
      }
    } catch (IllegalArgumentException e) {
      batch.forEach(p -> p.promise().tryFail(e));
      return;
    }
    inFlight++;
    pool.preparedQuery(EventSql.APPEND_BATCH)
        .execute(Tuple.of(ids, types, changes, terminal, payloads, results, errors, cancelledBy, cancelReasons))
        .onComplete(ar -> {
          inFlight--;
          if (ar.failed()) {
            batch.forEach(p -> p.promise().tryFail(ar.cause()));
          } else {
            Map<UUID, Row> stored = new HashMap<>();
            for (Row row : ar.result()) {
              stored.put(row.getUUID("submission_id"), row);
            }
            for (int i = 0; i < n; i++) {
              Pending pending = batch.get(i);
              Row row = stored.get(ids[i]);
              if (row == null) {
                pending.promise().tryFail(new CodedException(Failures.CONFLICT,
                    "submission " + ids[i] + " has finished"));
              } else {
                OffsetDateTime at = row.getOffsetDateTime("created_at");
                pending.promise().tryComplete(new EventFrame(ids[i].toString(), row.getInteger("seq"),
                    EventType.valueOf(types[i]), at, pending.body().getJsonObject("fields", new JsonObject())).toJson());
              }
            }
          }
          flush();
        });
  }
}
