package dev.kernelrunner.store;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.pgclient.PgException;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The batching rules without a database: a statement is a promise the test completes. */
class BatcherTest {
  /** Writes strings; a batch holding "bad" fails as PostgreSQL fails a statement with one bad value. */
  private static final class Strings extends Batcher<String, String> {
    final List<List<String>> statements = new ArrayList<>();
    final List<Promise<Void>> running = new ArrayList<>();
    final Throwable failure;

    Strings(Throwable failure) {
      super(1, 100);
      this.failure = failure;
    }

    @Override
    protected Object key(String item) {
      return item;
    }

    @Override
    protected Future<?> write(List<Pending<String, String>> batch) {
      List<String> items = batch.stream().map(Pending::item).toList();
      statements.add(items);
      Promise<Void> done = Promise.promise();
      running.add(done);
      return done.future().compose(v -> {
        if (items.contains("bad")) {
          return Future.failedFuture(failure);
        }
        batch.forEach(p -> p.promise().tryComplete("stored " + p.item()));
        return Future.succeededFuture();
      });
    }

    void finishNext() {
      running.remove(0).complete();
    }
  }

  @Test
  void aBadWriteFailsAloneAndTheOthersOfItsBatchAreStored() {
    Strings batcher = new Strings(new PgException("invalid byte sequence", "ERROR", "22021", null));
    Future<String> first = batcher.submit("first");
    Future<String> good = batcher.submit("good");
    Future<String> bad = batcher.submit("bad");
    Future<String> other = batcher.submit("other");
    batcher.finishNext(); // [first]; then [good, bad, other] go together
    assertEquals(List.of(List.of("first"), List.of("good", "bad", "other")), batcher.statements);
    batcher.finishNext(); // that batch fails: each is tried on its own, in order
    batcher.finishNext();
    batcher.finishNext();
    batcher.finishNext();
    assertEquals(List.of(List.of("good"), List.of("bad"), List.of("other")),
        batcher.statements.subList(2, 5));
    assertEquals("stored first", first.result());
    assertEquals("stored good", good.result());
    assertEquals("stored other", other.result());
    assertTrue(bad.failed());
  }

  @Test
  void whenTheDatabaseIsAwayTheWholeBatchFailsAtOnce() {
    Strings batcher = new Strings(new java.net.ConnectException("refused"));
    batcher.submit("first");
    Future<String> good = batcher.submit("good");
    Future<String> bad = batcher.submit("bad");
    batcher.finishNext();
    batcher.finishNext();
    assertEquals(2, batcher.statements.size(), "no retry one by one: " + batcher.statements);
    assertTrue(good.failed());
    assertTrue(bad.failed());
  }
}
