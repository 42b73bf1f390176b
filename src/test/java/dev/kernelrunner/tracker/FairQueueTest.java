package dev.kernelrunner.tracker;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

class FairQueueTest {
  /** Items are "owner:n". */
  private static FairQueue<String> queue() {
    return new FairQueue<>(item -> item.substring(0, item.indexOf(':')));
  }

  private static List<String> drain(FairQueue<String> queue) {
    List<String> order = new ArrayList<>();
    for (String item = queue.poll(); item != null; item = queue.poll()) {
      order.add(item);
    }
    return order;
  }

  @Test
  void ownersTakeTurnsRatherThanFirstComeFirstServed() {
    FairQueue<String> queue = queue();
    for (int i = 1; i <= 4; i++) {
      queue.add("flood:" + i);
    }
    queue.add("ann:1");
    queue.add("bob:1");
    queue.add("ann:2");
    assertEquals(List.of("flood:1", "ann:1", "bob:1", "flood:2", "ann:2", "flood:3", "flood:4"), drain(queue));
    assertTrue(queue.isEmpty());
    assertNull(queue.poll());
  }

  @Test
  void aNewcomerWaitsOnlyForTheCurrentRound() {
    FairQueue<String> queue = queue();
    for (int i = 1; i <= 100; i++) {
      queue.add("flood:" + i);
    }
    assertEquals("flood:1", queue.poll());
    assertEquals(1, queue.add("ann:1"), "behind flood's next, not its 99");
    assertEquals(List.of("flood:2", "ann:1", "flood:3"), drain(queue).subList(0, 3));
  }

  @Test
  void aRequeuedItemGoesFirst() {
    FairQueue<String> queue = queue();
    queue.add("ann:1");
    queue.add("bob:1");
    queue.addFirst("bob:0");
    assertEquals(List.of("bob:0", "ann:1", "bob:1"), iterate(queue));
    assertEquals(List.of("bob:0", "ann:1", "bob:1"), drain(queue));
  }

  @Test
  void positionsAndIterationFollowDispatchOrderWhateverHappens() {
    Random random = new Random(7);
    FairQueue<String> queue = queue();
    List<String> live = new ArrayList<>();
    for (int step = 0; step < 2000; step++) {
      int op = random.nextInt(10);
      if (op < 5) {
        String item = "u" + random.nextInt(6) + ":" + step;
        int position = queue.add(item);
        live.add(item);
        assertEquals(iterate(queue).indexOf(item), position, "position of " + item);
      } else if (op < 8) {
        List<String> expected = iterate(queue);
        String polled = queue.poll();
        assertEquals(expected.isEmpty() ? null : expected.get(0), polled);
        live.remove(polled);
      } else if (!live.isEmpty()) {
        String gone = live.remove(random.nextInt(live.size()));
        assertTrue(queue.remove(gone));
      }
      assertEquals(live.size(), queue.size());
      assertEquals(live.size(), iterate(queue).size());
    }
  }

  private static List<String> iterate(FairQueue<String> queue) {
    List<String> items = new ArrayList<>();
    queue.forEach(items::add);
    return items;
  }
}
