package dev.kernelrunner.cli;

/** The terminal client's exit statuses: what scripts branch on. */
final class Exit {
  private Exit() {}

  static final int OK = 0;
  static final int COMPILE_ERROR = 2;
  static final int WRONG_ANSWER = 3;
  static final int RUNTIME_ERROR = 4;
  static final int OTHER = 5;
  /** A command line the client cannot make sense of (sysexits' EX_USAGE). */
  static final int USAGE = 64;

  /** The status a submission that ended as {@code status} exits with. */
  static int of(String status) {
    return switch (status == null ? "" : status) {
      case "BENCHMARKED", "CHECKED", "PROFILED", "BASELINED" -> OK;
      case "COMPILE_ERROR" -> COMPILE_ERROR;
      case "WRONG_ANSWER" -> WRONG_ANSWER;
      case "RUNTIME_ERROR", "TIME_LIMIT_EXCEEDED" -> RUNTIME_ERROR;
      default -> OTHER;
    };
  }
}
