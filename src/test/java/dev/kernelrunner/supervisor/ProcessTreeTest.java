package dev.kernelrunner.supervisor;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** Real processes: what each way of stopping a tree reaches. */
class ProcessTreeTest {

  /**
   * A local worker is stopped with {@link ProcessTree#terminate}: its jobs' processes, in sessions of their own, are
   * its to stop (one TERMed beside it could end, and be posted as the job's own end, before it knew it was stopping).
   */
  @Test
  void terminateLeavesADescendantInASessionOfItsOwn() throws Exception {
    Process parent = new ProcessBuilder("sh", "-c", "setsid sleep 30 & wait").start();
    ProcessHandle job = null;
    try {
      job = awaitChild(parent);
      ProcessTree.terminate(parent.pid());
      assertTrue(parent.waitFor(5, TimeUnit.SECONDS), "the parent got TERM");
      Thread.sleep(200);
      assertTrue(job.isAlive(), "the descendant in its own session is left to its parent");
    } finally {
      parent.destroyForcibly();
      if (job != null) {
        job.destroyForcibly();
      }
    }
  }

  @Test
  void signalReachesEveryDescendant() throws Exception {
    Process parent = new ProcessBuilder("sh", "-c", "setsid sleep 30 & wait").start();
    ProcessHandle job = null;
    try {
      job = awaitChild(parent);
      ProcessTree.signal(parent.pid(), false);
      assertTrue(parent.waitFor(5, TimeUnit.SECONDS));
      assertTrue(job.onExit().get(5, TimeUnit.SECONDS) != null && !job.isAlive(), "the descendant got TERM too");
    } finally {
      parent.destroyForcibly();
      if (job != null) {
        job.destroyForcibly();
      }
    }
  }

  private static ProcessHandle awaitChild(Process parent) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
    while (System.nanoTime() < deadline) {
      var child = parent.children().findFirst();
      if (child.isPresent() && child.get().info().command().map(c -> c.endsWith("sleep")).orElse(false)) {
        return child.get();
      }
      Thread.sleep(20);
    }
    throw new AssertionError("no child started");
  }
}
