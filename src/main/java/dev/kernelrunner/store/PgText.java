package dev.kernelrunner.store;

import io.vertx.pgclient.PgException;
import java.util.List;
import java.util.regex.Pattern;

/**
 * What PostgreSQL cannot store, made storable at the store's edge: jsonb refuses the escape {@code \u0000} and
 * text refuses the character NUL, and compiler output and a kernel's prints reach events. Both become U+FFFD
 * (the replacement character), so that the text shows something was there.
 */
final class PgText {
  /** A JSON {@code \u0000} escape: preceded by an even number of backslashes (an odd one escapes the next). */
  private static final Pattern NUL_ESCAPE = Pattern.compile("(?<!\\\\)((?:\\\\\\\\)*)\\\\u0000");

  private PgText() {}

  /** JSON text as jsonb takes it. */
  static String json(String json) {
    if (json == null || !json.contains("u0000")) {
      return json;
    }
    // Keeps the even run of backslashes before the escape and writes \ufffd in its place.
    return NUL_ESCAPE.matcher(json).replaceAll("$1\\\\ufffd");
  }

  /** Plain text as a text column takes it. */
  static String text(String text) {
    return text == null || text.indexOf('\0') < 0 ? text : text.replace('\0', '\uFFFD');
  }

  /**
   * Errors in what we sent (data, integrity, syntax, unsupported, PL/pgSQL): they come from a statement's own
   * values, so a batch that hits one is tried again a write at a time. Every other class (connection,
   * resources, shutdown, a database not accepting connections...) means the database cannot serve right now.
   */
  static boolean dataError(Throwable error) {
    return error instanceof PgException pg && pg.getSqlState() != null && pg.getSqlState().length() >= 2
        && List.of("22", "23", "42", "0A", "P0").contains(pg.getSqlState().substring(0, 2));
  }
}
