package dev.kernelrunner.supervisor;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** Real process groups, signalled through the shell; the shell itself killed midway. */
class GroupSignalsTest {

  @Test
  void signalsAWholeGroupAndTellsWhetherItIsAlive() throws Exception {
    // A session leader with a child of its own: both are in the group.
    Process leader = new ProcessBuilder("setsid", "sh", "-c", "sleep 30 & wait").start();
    long pgid = leader.pid();
    try {
      assertTrue(waitFor(() -> ProcessHandle.of(pgid).map(p -> p.children().count() == 1).orElse(false)));
      ProcessHandle child = ProcessHandle.of(pgid).orElseThrow().children().findFirst().orElseThrow();
      GroupSignals signals = GroupSignals.get();
      assertTrue(signals.signal(pgid, "0"), "alive");
      assertTrue(signals.signal(pgid, "KILL"));
      assertTrue(leader.waitFor(5, TimeUnit.SECONDS));
      assertTrue(waitFor(() -> !child.isAlive()), "the child went with the group");
      assertFalse(signals.signal(pgid, "0"), "nothing left in the group");
    } finally {
      leader.destroyForcibly();
    }
  }

  @Test
  void aShellThatDiedIsReplaced() throws Exception {
    GroupSignals signals = GroupSignals.get();
    assertFalse(signals.signal(999_999_999L, "0"));
    ProcessHandle.current().children()
        .filter(p -> p.info().command().map(c -> c.endsWith("sh")).orElse(false))
        .forEach(ProcessHandle::destroyForcibly);
    Thread.sleep(100);
    Process leader = new ProcessBuilder("setsid", "sleep", "30").start();
    try {
      assertTrue(signals.signal(leader.pid(), "0"), "answered by a new shell");
      assertTrue(signals.signal(leader.pid(), "TERM"));
      assertTrue(leader.waitFor(5, TimeUnit.SECONDS));
    } finally {
      leader.destroyForcibly();
    }
  }

  @Test
  void onlyNumbersAndKnownSignalsGoToTheShell() {
    GroupSignals signals = GroupSignals.get();
    assertThrows(IllegalArgumentException.class, () -> signals.signal(1, "KILL"));
    assertThrows(IllegalArgumentException.class, () -> signals.signal(0, "TERM"));
    assertThrows(IllegalArgumentException.class, () -> signals.signal(1234, "TERM; rm -rf /"));
  }

  private static boolean waitFor(java.util.function.BooleanSupplier condition) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
    while (System.nanoTime() < deadline) {
      if (condition.getAsBoolean()) {
        return true;
      }
      Thread.sleep(20);
    }
    return condition.getAsBoolean();
  }
}
