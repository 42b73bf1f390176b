package dev.kernelrunner.supervisor;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.TimeUnit;
import java.util.function.LongConsumer;
import org.junit.jupiter.api.Test;

/** Real processes: what each way of stopping a tree reaches. */
class ProcessTreeTest {

  /**
   * A local worker is stopped with {@link ProcessTree#terminate}: its jobs' processes, in sessions of their own, are
   * its to stop (one TERMed beside it could end, and be posted as the job's own end, before it knew it was stopping).
   */
  @Test
  void terminateLeavesADescendantInASessionOfItsOwn() throws Exception {
    stopParentOfAJob(ProcessTree::terminate, job -> {
      Thread.sleep(200);
      assertTrue(job.isAlive(), "the job is left to its parent");
    });
  }

  @Test
  void signalReachesEveryDescendant() throws Exception {
    // The job got TERM too: it ends (else a TimeoutException fails the test).
    stopParentOfAJob(pid -> ProcessTree.signal(pid, false), job -> job.onExit().get(5, TimeUnit.SECONDS));
  }

  /** Runs {@code check} on a child leading a session of its own, once its parent was stopped with {@code stop}. */
  private static void stopParentOfAJob(LongConsumer stop, Check check) throws Exception {
    Process parent = new ProcessBuilder("sh", "-c", "setsid sleep 30 & wait").start();
    ProcessHandle job = null;
    try {
      job = awaitChild(parent);
      stop.accept(parent.pid());
      assertTrue(parent.waitFor(5, TimeUnit.SECONDS), "the parent got TERM");
      check.on(job);
    } finally {
      parent.destroyForcibly();
      if (job != null) {
        job.destroyForcibly();
      }
    }
  }

  private interface Check {
    void on(ProcessHandle job) throws Exception;
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
