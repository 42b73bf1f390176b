package dev.kernelrunner.store;

import dev.kernelrunner.bus.Failures;
import dev.kernelrunner.bus.Failures.CodedException;
import dev.kernelrunner.model.EventFrame;
import dev.kernelrunner.model.EventType;
import dev.kernelrunner.model.NewEvent;
import io.vertx.core.Future;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.Tuple;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;

/**
 * Writes events in batches ({@link Batcher}): one {@link EventSql#APPEND_BATCH} for whatever arrived while the
 * previous statements ran, so the database keeps up with hundreds of running submissions. A unit is one
 * submission's events in order (one or more); a batch holds at most one unit per submission (the tracker sends
 * a submission's next unit only when the previous one is stored).
 */
final class EventBatcher extends Batcher<EventBatcher.Unit, List<EventFrame>> {
  /** One submission's events, in order. */
  record Unit(UUID id, List<NewEvent> events) {}

  private final Pool pool;

  EventBatcher(Pool pool, int maxInFlight, int maxEvents) {
    super(maxInFlight, maxEvents);
    this.pool = pool;
  }

  /** Stores {@code events} of submission {@code id} in order; the frames come back in the same order. */
  Future<List<EventFrame>> append(UUID id, List<NewEvent> events) {
    return submit(new Unit(id, events));
  }

  @Override
  protected Object key(Unit unit) {
    return unit.id();
  }

  @Override
  protected int weight(Unit unit) {
    return unit.events().size();
  }

  @Override
  protected Future<?> write(List<Pending<Unit, List<EventFrame>>> batch) {
    int units = batch.size();
    int eventCount = batch.stream().mapToInt(p -> p.item().events().size()).sum();
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
      Unit unit = batch.get(u).item();
      ids[u] = unit.id();
      counts[u] = unit.events().size();
      provisioning[u] = false;
      terminal[u] = false;
      int ordinal = 1;
      for (NewEvent event : unit.events()) {
        EventType type = event.type();
        statuses[u] = type.changesStatus() ? type.name() : statuses[u];
        provisioning[u] |= type == EventType.PROVISIONING;
        terminal[u] |= event.terminal();
        results[u] = event.result() != null ? PgText.json(event.result().encode()) : results[u];
        errors[u] = event.error() != null ? PgText.json(event.error().encode()) : errors[u];
        cancelledBy[u] = event.cancelledBy() != null ? PgText.text(event.cancelledBy()) : cancelledBy[u];
        cancelReasons[u] = event.cancelReason() != null ? PgText.text(event.cancelReason()) : cancelReasons[u];
        eventIds[e] = unit.id();
        ordinals[e] = ordinal++;
        types[e] = type.name();
        payloads[e] = PgText.json(event.payload());
        e++;
      }
    }
    return pool.preparedQuery(EventSql.APPEND_BATCH)
        .execute(Tuple.from(new Object[] {ids, counts, statuses, provisioning, terminal, results, errors,
            cancelledBy, cancelReasons, eventIds, ordinals, types, payloads}))
        .onSuccess(rows -> {
          Map<UUID, Row> written = new HashMap<>();
          for (Row row : rows) {
            written.put(row.getUUID(0), row);
          }
          for (Pending<Unit, List<EventFrame>> pending : batch) {
            Unit unit = pending.item();
            Row row = written.get(unit.id());
            if (row == null) {
              pending.promise().tryFail(new CodedException(Failures.CONFLICT,
                  "submission " + unit.id() + " has finished"));
              continue;
            }
            int base = row.getInteger(1);
            OffsetDateTime at = row.getOffsetDateTime(2);
            String id = unit.id().toString();
            List<EventFrame> frames = new ArrayList<>(unit.events().size());
            for (NewEvent event : unit.events()) {
              frames.add(new EventFrame(id, ++base, event.type(), at, event.fields()));
            }
            pending.promise().tryComplete(frames);
          }
        });
  }
}
