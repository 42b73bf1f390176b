package dev.kernelrunner.cli;

/** What went wrong, in one line for the terminal (never a stack trace), and the exit status it means. */
final class CliError extends Exception {
  private final int exitCode;
  private final boolean passing;

  CliError(String message) {
    this(message, Exit.OTHER, false);
  }

  CliError(String message, int exitCode) {
    this(message, exitCode, false);
  }

  /** {@code passing}: the service could not be reached (trying again may help), as opposed to an answer. */
  CliError(String message, int exitCode, boolean passing) {
    super(message, null, false, false);
    this.exitCode = exitCode;
    this.passing = passing;
  }

  /** What a JSON getter's failure on a server's answer means, in words rather than Java's. */
  static String unexpected(RuntimeException e) {
    if (e instanceof ClassCastException) {
      return "a field of another JSON type than a kernel-runner's";
    }
    return e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage();
  }

  boolean passing() {
    return passing;
  }

  int exitCode() {
    return exitCode;
  }
}
