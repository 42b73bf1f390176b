package dev.kernelrunner.support;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.stream.Stream;

/**
 * The test agents and the real agent, copied once per test JVM into a folder every user can read: a service
 * running as root runs agents as an unprivileged user, who may not be able to enter the checkout (under /root,
 * say). Tests name agents through here, never through the checkout.
 */
public final class TestAgents {
  private static Path root;

  private TestAgents() {}

  /** {@code relative} under the copy: {@code agents/fake_agent.py}, {@code remote-agent}, ... */
  public static synchronized Path path(String relative) {
    if (root == null) {
      root = copy();
    }
    return root.resolve(relative);
  }

  private static Path copy() {
    try {
      Path target = TempDirs.directory("kr-agents");
      Files.setPosixFilePermissions(target, PosixFilePermissions.fromString("rwxr-xr-x"));
      copyTree(Path.of("src/test/resources/agents"), target.resolve("agents"));
      copyTree(Path.of("src/test/resources/agent-transcripts"), target.resolve("agent-transcripts"));
      copyTree(Path.of("remote-agent"), target.resolve("remote-agent"));
      return target;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private static void copyTree(Path from, Path to) throws IOException {
    List<Path> sources;
    try (Stream<Path> walk = Files.walk(from)) {
      sources = walk.filter(p -> !p.toString().contains("__pycache__")).toList();
    }
    for (Path source : sources) {
      Path dest = to.resolve(from.relativize(source).toString());
      if (Files.isDirectory(source)) {
        Files.createDirectories(dest);
        Files.setPosixFilePermissions(dest, PosixFilePermissions.fromString("rwxr-xr-x"));
      } else {
        Files.copy(source, dest);
        Files.setPosixFilePermissions(dest, PosixFilePermissions.fromString(
            Files.isExecutable(source) ? "rwxr-xr-x" : "rw-r--r--"));
      }
    }
  }
}
