package dev.kernelrunner.supervisor;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Signals a whole process tree. Agents start a session of their own (their first act: {@code setsid()}), so
 * their process group holds every descendant, including those re-parented after their parent died
 * ({@link GroupSignals} signals the group). An agent that does not is still stopped with its descendants,
 * found by walking the tree, but not with orphans of it; the service warns once when it meets one. Other
 * commands the service runs get a session from {@link #sessionLeaderPrefix()}. Blocking.
 */
final class ProcessTree {
  private static final Logger log = LoggerFactory.getLogger(ProcessTree.class);
  private static final Path SETSID = Path.of("/usr/bin/setsid");
  private static final AtomicBoolean WARNED = new AtomicBoolean();

  private ProcessTree() {}

  /** The argv prefix that starts a command as the leader of a new session (and so of a process group). */
  static List<String> sessionLeaderPrefix() {
    return Files.isExecutable(SETSID) ? List.of(SETSID.toString()) : List.of();
  }


  /** Warns (once per service) when agent {@code pid} does not lead its own process group. */
  static void warnUnlessGroupLeader(long pid, String submissionId) {
    Long group = processGroup(pid);
    if (group != null && group != pid && WARNED.compareAndSet(false, true)) {
      log.warn("the agent of {} (pid {}) did not start its own "
          + "session (setsid); its orphans would outlive a cancel. Start the agent's session in the agent.",
          submissionId, pid);
    }
  }

  /** The process group of {@code pid} (from /proc), or null when it is gone. */
  static Long processGroup(long pid) {
    try {
      String stat = Files.readString(Path.of("/proc/" + pid + "/stat"));
      String[] fields = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
      return Long.parseLong(fields[2]);
    } catch (IOException | RuntimeException e) {
      return null;
    }
  }

  /** Sends TERM (or KILL when {@code force}) to the group led by {@code pid} and to every descendant. */
  static void signal(long pid, boolean force) {
    Optional<ProcessHandle> root = ProcessHandle.of(pid);
    List<ProcessHandle> descendants = root.map(p -> p.descendants().toList()).orElse(List.of());
    signalGroup(pid, force ? "KILL" : "TERM");
    for (ProcessHandle p : descendants) {
      if (force) {
        p.destroyForcibly();
      } else {
        p.destroy();
      }
    }
    root.ifPresent(p -> {
      if (force) {
        p.destroyForcibly();
      } else {
        p.destroy();
      }
    });
  }

  /** Sends TERM to {@code pid} and the group it leads, leaving its descendants in sessions of their own to it. */
  static void terminate(long pid) {
    signalGroup(pid, "TERM");
    ProcessHandle.of(pid).ifPresent(ProcessHandle::destroy);
  }

  /** Whether any process of the group led by {@code pgid} is still alive. */
  static boolean groupAlive(long pgid) {
    return signalGroup(pgid, "0");
  }

  private static boolean signalGroup(long pgid, String signal) {
    return GroupSignals.get().signal(pgid, signal);
  }

  /**
   * Kills a process left by a previous run of the service, if {@code pid} is still an agent of that
   * submission (its command line names the submission), so a re-used pid is never touched.
   */
  static boolean reapOrphan(long pid, String submissionId, long graceMillis) throws InterruptedException {
    Optional<ProcessHandle> handle = ProcessHandle.of(pid);
    if (handle.isEmpty()) {
      return false;
    }
    String commandLine = handle.get().info().commandLine().orElse("");
    if (!commandLine.contains(submissionId)) {
      return false;
    }
    signal(pid, false);
    long deadline = System.currentTimeMillis() + graceMillis;
    while (System.currentTimeMillis() < deadline && (handle.get().isAlive() || groupAlive(pid))) {
      Thread.sleep(50);
    }
    signal(pid, true);
    return true;
  }
}
