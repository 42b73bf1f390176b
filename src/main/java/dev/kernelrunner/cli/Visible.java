package dev.kernelrunner.cli;

/**
 * Text from the network made harmless for a terminal: every control character but newline and tab is shown
 * instead of obeyed, so a server (or a worker's log tail it relays) cannot set the title, write the clipboard
 * (OSC 52), clear the screen or overwrite a line with a fake verdict. C0 characters read as {@code cat -v} shows
 * them ({@code ESC} as {@code ^[}, {@code CR} as {@code ^M}); DEL, the C1 controls (8-bit {@code CSI} and the like)
 * and the bidirectional overrides that reorder a line read as {@code \}{@code u009b}, which is also what they are
 * in a JSON string, so {@code --json} output stays valid JSON with the same values.
 */
final class Visible {
  private Visible() {}

  static String text(String text) {
    if (text == null) {
      return "null";
    }
    StringBuilder out = null;
    for (int i = 0; i < text.length(); i++) {
      char c = text.charAt(i);
      String shown = shown(c);
      if (shown != null && out == null) {
        out = new StringBuilder(text.length() + 16).append(text, 0, i);
      }
      if (out != null) {
        if (shown == null) {
          out.append(c);
        } else {
          out.append(shown);
        }
      }
    }
    return out == null ? text : out.toString();
  }

  /** How {@code c} is shown, or null when it is shown as itself. */
  private static String shown(char c) {
    if (c == '\n' || c == '\t') {
      return null;
    }
    if (c < 0x20) {
      return "^" + (char) (c + 0x40);
    }
    if ((c >= 0x7f && c <= 0x9f) || (c >= '\u202a' && c <= '\u202e') || (c >= '\u2066' && c <= '\u2069')) {
      return String.format("\\u%04x", (int) c);
    }
    return null;
  }
}
