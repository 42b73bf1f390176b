package dev.kernelrunner.supervisor;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.vertx.core.Future;
import io.vertx.core.Promise;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class LatestWriterTest {
  @Test
  void oneWriteAtATimeAndOfTheValuesOfferedMeanwhileOnlyTheNewest() {
    List<Integer> written = new ArrayList<>();
    List<Promise<Void>> pending = new ArrayList<>();
    LatestWriter<Integer> writer = new LatestWriter<>(value -> {
      written.add(value);
      Promise<Void> done = Promise.promise();
      pending.add(done);
      return done.future();
    });
    writer.offer(1);
    writer.offer(2);
    writer.offer(3);
    assertEquals(List.of(1), written, "the first at once, the others wait");
    pending.get(0).complete();
    assertEquals(List.of(1, 3), written, "2 was overtaken by 3 before it was written");
    pending.get(1).fail("the database is away");
    assertEquals(2, written.size(), "nothing left to write");
    writer.offer(4);
    assertEquals(List.of(1, 3, 4), written, "a failed write does not stop the next");
  }

  @Test
  void aWriterWithNothingInFlightWritesAtOnce() {
    List<Integer> written = new ArrayList<>();
    LatestWriter<Integer> writer = new LatestWriter<>(value -> {
      written.add(value);
      return Future.succeededFuture();
    });
    writer.offer(7);
    writer.offer(8);
    assertEquals(List.of(7, 8), written);
  }
}
