package dev.kernelrunner.store;

import io.vertx.core.Future;
import io.vertx.core.Promise;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.Set;

/**
 * Puts the writes that arrive while earlier statements run into one statement (one round trip, one commit),
 * at most {@code maxInFlight} statements at a time. No wait is added: a write that finds a free slot goes at
 * once. A batch holds at most one write per key (what the statement can take only once, such as a row it
 * updates) and at most {@code maxWeight} in all (after the first); the others wait for the next, in order.
 * Used from one event loop.
 *
 * @param <T> a write
 * @param <R> what its caller gets once it is stored
 */
abstract class Batcher<T, R> {
  /** A write and who waits for it; {@code alone}: it goes in a batch of its own (its batch failed). */
  protected record Pending<T, R>(T item, Promise<R> promise, boolean alone) {}

  private final int maxInFlight;
  private final int maxWeight;
  private final ArrayDeque<Pending<T, R>> queue = new ArrayDeque<>();
  private int inFlight;

  Batcher(int maxInFlight, int maxWeight) {
    this.maxInFlight = maxInFlight;
    this.maxWeight = maxWeight;
  }

  /** What a batch may hold only once. */
  protected abstract Object key(T item);

  /** How much of the batch's size the write takes. */
  protected int weight(T item) {
    return 1;
  }

  /**
   * Runs the batch's statement and completes each write's promise; a failure of the returned future fails
   * those not completed yet.
   */
  protected abstract Future<?> write(List<Pending<T, R>> batch);

  final Future<R> submit(T item) {
    Promise<R> promise = Promise.promise();
    queue.add(new Pending<>(item, promise, false));
    flush();
    return promise.future();
  }

  private void flush() {
    while (inFlight < maxInFlight && !queue.isEmpty()) {
      List<Pending<T, R>> batch = new ArrayList<>();
      Set<Object> keys = new HashSet<>();
      int weight = 0;
      Iterator<Pending<T, R>> it = queue.iterator();
      while (it.hasNext() && (batch.isEmpty() || weight < maxWeight)) {
        Pending<T, R> pending = it.next();
        if (pending.alone() && !batch.isEmpty()) {
          break;
        }
        if (keys.add(key(pending.item()))) {
          batch.add(pending);
          weight += weight(pending.item());
          it.remove();
          if (pending.alone()) {
            break;
          }
        }
      }
      inFlight++;
      Future<?> written;
      try {
        written = write(batch);
      } catch (RuntimeException e) {
        written = Future.failedFuture(e);
      }
      written.onComplete(ar -> {
        inFlight--;
        if (ar.failed() && batch.size() > 1 && PgText.dataError(ar.cause())) {
          // An error in the data may be one write's own: each write again on its own, in order, ahead of what
          // came since, so that one user's bad row fails alone. (Not when the database is away: that fails all.)
          for (int i = batch.size() - 1; i >= 0; i--) {
            Pending<T, R> pending = batch.get(i);
            if (!pending.promise().future().isComplete()) {
              queue.addFirst(new Pending<>(pending.item(), pending.promise(), true));
            }
          }
        } else if (ar.failed()) {
          batch.forEach(p -> p.promise().tryFail(ar.cause()));
        }
        flush();
      });
    }
  }
}
