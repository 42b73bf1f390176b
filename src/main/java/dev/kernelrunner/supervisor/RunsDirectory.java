package dev.kernelrunner.supervisor;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.Comparator;
import java.util.Set;
import java.util.stream.Stream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * {@code DATA_DIR/runs/<submission id>}: a local run's folder goes with its agent; what the dstack backend keeps
 * there (the run specs it sent) is removed once older than {@code RUNS_RETENTION_HOURS}. Blocking.
 */
final class RunsDirectory {
  private static final Logger log = LoggerFactory.getLogger(RunsDirectory.class);

  private RunsDirectory() {}

  /** Removes a run's folder and everything in it; a failure is logged, never thrown. */
  static void delete(Path dir) {
    if (!Files.exists(dir)) {
      return;
    }
    try (Stream<Path> files = Files.walk(dir)) {
      for (Path path : files.sorted(Comparator.reverseOrder()).toList()) {
        Files.deleteIfExists(path);
      }
    } catch (IOException | RuntimeException e) {
      log.warn("could not remove {}: {}", dir, e.toString());
    }
  }

  /** Removes run folders not modified for {@code retention}, except those of {@code live} submissions. */
  static int prune(Path runsDir, Duration retention, Set<String> live) {
    if (!Files.isDirectory(runsDir)) {
      return 0;
    }
    Instant cutoff = Instant.now().minus(retention);
    int removed = 0;
    try (Stream<Path> dirs = Files.list(runsDir)) {
      for (Path dir : dirs.toList()) {
        if (live.contains(dir.getFileName().toString())) {
          continue;
        }
        if (Files.getLastModifiedTime(dir).toInstant().isBefore(cutoff)) {
          delete(dir);
          removed++;
        }
      }
    } catch (IOException e) {
      log.warn("could not look through {}: {}", runsDir, e.toString());
    }
    return removed;
  }
}
