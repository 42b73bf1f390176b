package dev.kernelrunner.supervisor;

import io.vertx.core.Future;
import java.util.function.Function;

/**
 * Writes one value at a time and, of the values offered meanwhile, only the newest. A worker reports a run's log
 * position with every batch of lines (one a line, at 25 lines a second a job): written one UPDATE each, they
 * doubled the database's statements under load; this way a run costs one in flight. Used on one context only.
 */
final class LatestWriter<T> {
  private final Function<T, Future<?>> write;
  private T waiting;
  private boolean busy;

  LatestWriter(Function<T, Future<?>> write) {
    this.write = write;
  }

  void offer(T value) {
    waiting = value;
    if (!busy) {
      next();
    }
  }

  private void next() {
    T value = waiting;
    waiting = null;
    busy = value != null;
    if (busy) {
      write.apply(value).onComplete(done -> next());
    }
  }
}
