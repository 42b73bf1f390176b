package dev.kernelrunner.store;

import io.vertx.core.Future;
import io.vertx.core.json.JsonObject;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.Tuple;
import java.time.OffsetDateTime;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;

/**
 * Creates submissions in batches ({@link Batcher}): the creates that arrive while earlier statements run go out
 * together as one {@link SubmissionSql#CREATE_BATCH}, one commit (one WAL flush) for all of them, as
 * {@link EventBatcher} does for events. At a deadline, hundreds of creates a second would otherwise each wait
 * for a flush of their own. A batch holds one create per user (the quota row is updated once per statement).
 */
final class CreateBatcher extends Batcher<CreateBatcher.Create, OffsetDateTime> {
  /**
   * One create: the row's fields as the tracker sent them, the first event's payload, and its user's quotas.
   */
  record Create(UUID id, String userId, JsonObject row, JsonObject firstEvent, QuotaUsage.Limits limits) {}

  private final Pool pool;

  CreateBatcher(Pool pool, int maxInFlight, int maxCreates) {
    super(maxInFlight, maxCreates);
    this.pool = pool;
  }

  /** Stores the submission and its first event: their time, or null when the user's quota is full. */
  Future<OffsetDateTime> create(Create create) {
    return submit(create);
  }

  @Override
  protected Object key(Create create) {
    return create.userId();
  }

  @Override
  protected Future<?> write(List<Pending<Create, OffsetDateTime>> batch) {
    int n = batch.size();
    UUID[] ids = new UUID[n];
    String[] users = new String[n];
    String[] problems = new String[n];
    String[] languages = new String[n];
    String[] gpuTypes = new String[n];
    String[] dtypes = new String[n];
    String[] modes = new String[n];
    String[] codes = new String[n];
    Boolean[] cancelOnDisconnect = new Boolean[n];
    String[] payloads = new String[n];
    Integer[] maxActive = new Integer[n];
    Integer[] perHour = new Integer[n];
    Integer[] gpuSeconds = new Integer[n];
    for (int i = 0; i < n; i++) {
      Create create = batch.get(i).item();
      JsonObject row = create.row();
      ids[i] = create.id();
      users[i] = create.userId();
      problems[i] = row.getString("problem");
      languages[i] = row.getString("language");
      gpuTypes[i] = row.getString("gpu_type");
      dtypes[i] = row.getString("dtype");
      modes[i] = row.getString("mode");
      codes[i] = PgText.text(row.getString("code"));
      cancelOnDisconnect[i] = row.getBoolean("cancel_on_disconnect", false);
      payloads[i] = PgText.json(create.firstEvent().encode());
      maxActive[i] = create.limits().maxActive();
      perHour[i] = create.limits().perHour();
      gpuSeconds[i] = create.limits().gpuSecondsPerDay();
    }
    return pool.preparedQuery(SubmissionSql.CREATE_BATCH)
        .execute(Tuple.from(new Object[] {ids, users, problems, languages, gpuTypes, dtypes, modes, codes,
            cancelOnDisconnect, payloads, maxActive, perHour, gpuSeconds}))
        .onSuccess(rows -> {
          Map<UUID, OffsetDateTime> created = new HashMap<>();
          for (Row row : rows) {
            created.put(row.getUUID(0), row.getOffsetDateTime(1));
          }
          batch.forEach(p -> p.promise().tryComplete(created.get(p.item().id())));
        });
  }
}
