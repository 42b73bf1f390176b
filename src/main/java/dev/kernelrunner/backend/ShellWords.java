package dev.kernelrunner.backend;

/** Words for a POSIX shell's command line (and Python's shlex.split, which reads them the same way). */
public final class ShellWords {
  private ShellWords() {}

  /** One word: plain when it is only safe characters, else in single quotes (a quote inside closes and reopens). */
  public static String quote(String word) {
    return word.matches("[A-Za-z0-9_./:=@%+,-]+") ? word : "'" + word.replace("'", "'\"'\"'") + "'";
  }
}
