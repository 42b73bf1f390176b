package dev.kernelrunner.supervisor;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Signals a whole process tree. Agents start in a session of their own ({@code setsid}), so their process
 * group holds every descendant, including those re-parented after their parent died. Blocking.
 */
final class ProcessTree {
  private static final Logger log = LoggerFactory.getLogger(ProcessTree.class);
  private static final Path SETSID = Path.of("/usr/bin/setsid");

  private ProcessTree() {}

  /** The argv prefix that starts a command as the leader of a new session (and so of a process group). */
  static List<String> sessionLeaderPrefix() {
    return Files.isExecutable(SETSID) ? List.of(SETSID.toString()) : List.of();
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

  /** Whether any process of the group led by {@code pgid} is still alive. */
  static boolean groupAlive(long pgid) {
    return signalGroup(pgid, "0");
  }

  private static boolean signalGroup(long pgid, String signal) {
    try {
      Process kill = new ProcessBuilder("kill", "-s", signal, "--", "-" + pgid)
          .redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
      return kill.waitFor(5, TimeUnit.SECONDS) && kill.exitValue() == 0;
    } catch (IOException e) {
      log.debug("kill -s {} -{} failed: {}", signal, pgid, e.toString());
      return false;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return false;
    }
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
