package dev.kernelrunner.cli;

import java.io.PrintStream;

/** Where the terminal client prints: every line goes through {@link Visible}, whatever part of it the server sent. */
final class Screen {
  private final PrintStream target;

  Screen(PrintStream target) {
    this.target = target;
  }

  void println(String line) {
    target.println(Visible.text(line));
  }

  void print(String text) {
    target.print(Visible.text(text));
  }

  void println() {
    target.println();
  }

  void printf(String format, Object... args) {
    target.print(Visible.text(String.format(format, args)));
  }

  void flush() {
    target.flush();
  }
}
