package dev.kernelrunner.support;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.stream.Stream;

/**
 * Temporary folders and files of the tests, removed with all they hold when the test JVM ends (a service restarted
 * on the same data folder, an agent copy shared by many tests: none can go sooner). Before, every run left a few
 * hundred {@code kr-*} and {@code fake-*} folders in the system's temporary folder.
 */
public final class TempDirs {
  private static final List<Path> MADE = new ArrayList<>();

  static {
    Runtime.getRuntime().addShutdownHook(new Thread(TempDirs::removeAll, "temp-dirs"));
  }

  private TempDirs() {}

  /** A new folder in the system's temporary folder, named {@code prefix...}. */
  public static Path directory(String prefix) {
    try {
      return kept(Files.createTempDirectory(prefix));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** A new file in the system's temporary folder, named {@code prefix...suffix}. */
  public static Path file(String prefix, String suffix) {
    try {
      return kept(Files.createTempFile(prefix, suffix));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private static synchronized Path kept(Path path) {
    MADE.add(path);
    return path;
  }

  private static synchronized void removeAll() {
    for (Path path : MADE) {
      try (Stream<Path> all = Files.walk(path)) {
        all.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
      } catch (IOException | UncheckedIOException e) {
        // gone already, or not ours to remove: nothing to do at the JVM's end
      }
    }
  }
}
