package dev.kernelrunner.support;

import java.io.File;
import java.io.IOException;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;

/** A free TCP port, and the path of an installed program, for tests that start processes of their own. */
public final class Ports {
  private Ports() {}

  public static int free() throws IOException {
    try (ServerSocket socket = new ServerSocket(0)) {
      return socket.getLocalPort();
    }
  }

  /** {@code name} on the PATH; its absence is a clear failure naming the Debian package (.ci/run installs it). */
  public static String installed(String name, String debianPackage) {
    for (String dir : System.getenv().getOrDefault("PATH", "/usr/bin").split(File.pathSeparator)) {
      if (Files.isExecutable(Path.of(dir, name))) {
        return Path.of(dir, name).toString();
      }
    }
    throw new AssertionError(name + " is not installed: apt-get install -y " + debianPackage);
  }
}
