package dev.kernelrunner.store;

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
 * Creates submissions in batches: the creates that arrive while earlier statements run go out together as one
 * {@link SubmissionSql#CREATE_BATCH}, one commit (one WAL flush) for all of them, as {@link EventBatcher} does
 * for events. At a deadline, hundreds of creates a second would otherwise each wait for a flush of their own.
 * No wait is added: a create that finds a free connection is written at once. A batch holds one create per
 * user (the quota row is updated once per statement); another create of the same user waits for the next.
 */
final class CreateBatcher {
  /** One create: the row's fields as the tracker sent them, and the first event's payload. */
  record Create(UUID id, String userId, JsonObject row, JsonObject firstEvent) {}

  private record Pending(Create create, Promise<OffsetDateTime> promise) {}

  private final Pool pool;
  private final int maxInFlight;
  private final int maxCreates;
  private final int maxActivePerUser;
  private final ArrayDeque<Pending> queue = new ArrayDeque<>();
  private int inFlight;

  CreateBatcher(Pool pool, int maxInFlight, int maxCreates, int maxActivePerUser) {
    this.pool = pool;
    this.maxInFlight = maxInFlight;
    this.maxCreates = maxCreates;
    this.maxActivePerUser = maxActivePerUser;
  }

  /** Stores the submission and its first event: their time, or null when the user's quota is full. */
  Future<OffsetDateTime> create(Create create) {
    Promise<OffsetDateTime> promise = Promise.promise();
    queue.add(new Pending(create, promise));
    flush();
    return promise.future();
  }

  private void flush() {
    while (inFlight < maxInFlight && !queue.isEmpty()) {
      List<Pending> batch = new ArrayList<>();
      Set<String> users = new HashSet<>();
      Iterator<Pending> it = queue.iterator();
      while (it.hasNext() && batch.size() < maxCreates) {
        Pending pending = it.next();
        if (users.add(pending.create().userId())) {
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
    String[] users = new String[n];
    String[] problems = new String[n];
    String[] languages = new String[n];
    String[] gpuTypes = new String[n];
    String[] dtypes = new String[n];
    String[] modes = new String[n];
    String[] codes = new String[n];
    Boolean[] cancelOnDisconnect = new Boolean[n];
    String[] payloads = new String[n];
    for (int i = 0; i < n; i++) {
      Create create = batch.get(i).create();
      JsonObject row = create.row();
      ids[i] = create.id();
      users[i] = create.userId();
      problems[i] = row.getString("problem");
      languages[i] = row.getString("language");
      gpuTypes[i] = row.getString("gpu_type");
      dtypes[i] = row.getString("dtype");
      modes[i] = row.getString("mode");
      codes[i] = row.getString("code");
      cancelOnDisconnect[i] = row.getBoolean("cancel_on_disconnect", false);
      payloads[i] = create.firstEvent().encode();
    }
    inFlight++;
    pool.preparedQuery(SubmissionSql.CREATE_BATCH)
        .execute(Tuple.from(new Object[] {ids, users, problems, languages, gpuTypes, dtypes, modes, codes,
            cancelOnDisconnect, payloads, maxActivePerUser}))
        .onComplete(ar -> {
          inFlight--;
          if (ar.failed()) {
            batch.forEach(p -> p.promise().tryFail(ar.cause()));
          } else {
            Map<UUID, OffsetDateTime> created = new HashMap<>();
            for (Row row : ar.result()) {
              created.put(row.getUUID(0), row.getOffsetDateTime(1));
            }
            batch.forEach(p -> p.promise().tryComplete(created.get(p.create().id())));
          }
          flush();
        });
  }
}
