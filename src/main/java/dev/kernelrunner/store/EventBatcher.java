package dev.kernelrunner.store;

import dev.kernelrunner.bus.Failures;
import dev.kernelrunner.bus.Failures.CodedException;
import dev.kernelrunner.model.EventFrame;
import dev.kernelrunner.model.EventType;
import dev.kernelrunner.model.NewEvent;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.Tuple;
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
 * running submissions. No wait is added: a unit that finds a free connection is written at once. A unit is
 * one submission's events in order (one or more); a batch holds at most one unit per submission (the tracker
 * sends a submission's next unit only when the previous one is stored).
 */
final class EventBatcher {
  private record Pending(UUID id, List<NewEvent> events, Promise<List<EventFrame>> promise) {}

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

  /** Stores {@code events} of submission {@code id} in order; the frames come back in the same order. */
  Future<List<EventFrame>> append(UUID id, List<NewEvent> events) {
    Promise<List<EventFrame>> promise = Promise.promise();
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
    int e = 0;
    for (int u = 0; u < units; u++) {
      Pending pending = batch.get(u);
      ids[u] = pending.id();
      counts[u] = pending.events().size();
      provisioning[u] = false;
      terminal[u] = false;
      int ordinal = 1;
      for (NewEvent event : pending.events()) {
        EventType type = event.type();
        statuses[u] = type.changesStatus() ? type.name() : statuses[u];
        provisioning[u] |= type == EventType.PROVISIONING;
        terminal[u] |= event.terminal();
        results[u] = event.result() != null ? event.result().encode() : results[u];
        errors[u] = event.error() != null ? event.error().encode() : errors[u];
        cancelledBy[u] = event.cancelledBy() != null ? event.cancelledBy() : cancelledBy[u];
        cancelReasons[u] = event.cancelReason() != null ? event.cancelReason() : cancelReasons[u];
        eventIds[e] = pending.id();
        ordinals[e] = ordinal++;
        types[e] = type.name();
        payloads[e] = event.payload();
        e++;
      }
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
            Map<UUID, Row> written = new HashMap<>();
            for (Row row : ar.result()) {
              written.put(row.getUUID(0), row);
            }
            for (Pending pending : batch) {
              Row row = written.get(pending.id());
              if (row == null) {
                pending.promise().tryFail(new CodedException(Failures.CONFLICT,
                    "submission " + pending.id() + " has finished"));
                continue;
              }
              int base = row.getInteger(1);
              var at = row.getOffsetDateTime(2);
              String id = pending.id().toString();
              List<EventFrame> frames = new ArrayList<>(pending.events().size());
              for (NewEvent event : pending.events()) {
                frames.add(new EventFrame(id, ++base, event.type(), at, event.fields()));
              }
              pending.promise().tryComplete(frames);
            }
          }
          flush();
        });
  }
}
