package dev.kernelrunner.store;

import dev.kernelrunner.bus.Failures;
import dev.kernelrunner.bus.Failures.CodedException;
import dev.kernelrunner.model.EventFrame;
import dev.kernelrunner.model.EventType;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.Tuple;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Comparator;
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
 * running submissions. No wait is added: a unit that finds a free connection is written at once. A unit is
 * one submission's events in order (one or more); a batch holds at most one unit per submission (the tracker
 * sends a submission's next unit only when the previous one is stored).
 */
final class EventBatcher {
  private record Pending(UUID id, JsonArray events, Promise<JsonArray> promise) {}

  private final Pool pool;
  private final int maxInFlight;
  private final int maxEvents;
  private final ArrayDeque<Pending> queue = new ArrayDeque<>();
  private int inFlight;

  EventBatcher(Pool pool, int maxInFlight, int maxEvents) {
    this.pool = pool;
    this.maxInFlight = maxInFlight;
    this.maxEvents = maxEvents;
  }

  /** Stores {@code events} (each {@code type, fields, terminal, result, error, cancelled_by, cancel_reason}) in order. */
  Future<JsonArray> append(UUID id, JsonArray events) {
    Promise<JsonArray> promise = Promise.promise();
    queue.add(new Pending(id, events, promise));
    flush();
    return promise.future();
  }

  private void flush() {
    while (inFlight < maxInFlight && !queue.isEmpty()) {
      List<Pending> batch = new ArrayList<>();
      Set<UUID> ids = new HashSet<>();
      int events = 0;
      Iterator<Pending> it = queue.iterator();
      while (it.hasNext() && (batch.isEmpty() || events < maxEvents)) {
        Pending pending = it.next();
        if (ids.add(pending.id())) {
          batch.add(pending);
          events += pending.events().size();
          it.remove();
        }
      }
      write(batch, events);
    }
  }

  private void write(List<Pending> batch, int eventCount) {
    int units = batch.size();
    UUID[] ids = new UUID[units];
    Integer[] counts = new Integer[units];
    String[] statuses = new String[units];
    Boolean[] provisioning = new Boolean[units];
    Boolean[] terminal = new Boolean[units];
    String[] results = new String[units];
    String[] errors = new String[units];
    String[] cancelledBy = new String[units];
    String[] cancelReasons = new String[units];
    UUID[] eventIds = new UUID[eventCount];
    Integer[] ordinals = new Integer[eventCount];
    String[] types = new String[eventCount];
    String[] payloads = new String[eventCount];
    try {
      int e = 0;
      for (int u = 0; u < units; u++) {
        Pending pending = batch.get(u);
        ids[u] = pending.id();
        counts[u] = pending.events().size();
        provisioning[u] = false;
        terminal[u] = false;
        for (int i = 0; i < pending.events().size(); i++) {
          JsonObject event = pending.events().getJsonObject(i);
          EventType type = EventType.valueOf(event.getString("type"));
          statuses[u] = type.changesStatus() ? type.name() : statuses[u];
          provisioning[u] |= type == EventType.PROVISIONING;
          terminal[u] |= event.getBoolean("terminal", false);
          results[u] = event.getJsonObject("result") != null ? event.getJsonObject("result").encode() : results[u];
          errors[u] = event.getJsonObject("error") != null ? event.getJsonObject("error").encode() : errors[u];
          cancelledBy[u] = event.getString("cancelled_by", cancelledBy[u]);
          cancelReasons[u] = event.getString("cancel_reason", cancelReasons[u]);
          eventIds[e] = pending.id();
          ordinals[e] = i + 1;
          types[e] = type.name();
          payloads[e] = event.getJsonObject("fields", new JsonObject()).encode();
          e++;
        }
      }
    } catch (IllegalArgumentException | ClassCastException e) {
      batch.forEach(p -> p.promise().tryFail(e));
      return;
    }
    inFlight++;
    pool.preparedQuery(EventSql.APPEND_BATCH)
        .execute(Tuple.from(new Object[] {ids, counts, statuses, provisioning, terminal, results, errors,
            cancelledBy, cancelReasons, eventIds, ordinals, types, payloads}))
        .onComplete(ar -> {
          inFlight--;
          if (ar.failed()) {
            batch.forEach(p -> p.promise().tryFail(ar.cause()));
          } else {
            Map<UUID, List<Row>> stored = new HashMap<>();
            for (Row row : ar.result()) {
              stored.computeIfAbsent(row.getUUID("submission_id"), k -> new ArrayList<>()).add(row);
            }
            for (Pending pending : batch) {
              List<Row> rows = stored.get(pending.id());
              if (rows == null) {
                pending.promise().tryFail(new CodedException(Failures.CONFLICT,
                    "submission " + pending.id() + " has finished"));
                continue;
              }
              rows.sort(Comparator.comparingInt(row -> row.getInteger("seq")));
              JsonArray frames = new JsonArray();
              for (int i = 0; i < rows.size(); i++) {
                JsonObject event = pending.events().getJsonObject(i);
                frames.add(new EventFrame(pending.id().toString(), rows.get(i).getInteger("seq"),
                    EventType.valueOf(event.getString("type")), rows.get(i).getOffsetDateTime("created_at"),
                    event.getJsonObject("fields", new JsonObject())).toJson());
              }
              pending.promise().tryComplete(frames);
            }
          }
          flush();
        });
  }

  /** Whether these events can skip waiting for the WAL flush (none ends the submission or carries its outcome). */
  static boolean progressOnly(JsonArray events) {
    for (int i = 0; i < events.size(); i++) {
      JsonObject event = events.getJsonObject(i);
      if (event.getBoolean("terminal", false) || event.getValue("result") != null || event.getValue("error") != null
          || event.getValue("cancelled_by") != null) {
        return false;
      }
    }
    return true;
  }
}
