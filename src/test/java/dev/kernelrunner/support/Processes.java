package dev.kernelrunner.support;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/** Process checks for tests. */
public final class Processes {
  private Processes() {}

  /** Alive and not a zombie (a dead child whose parent has not reaped it yet is gone for our purposes). */
  public static boolean alive(long pid) {
    try {
      String stat = Files.readString(Path.of("/proc/" + pid + "/stat"));
      return stat.charAt(stat.lastIndexOf(')') + 2) != 'Z';
    } catch (IOException e) {
      return false;
    }
  }
}
