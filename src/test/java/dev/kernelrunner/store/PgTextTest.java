package dev.kernelrunner.store;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.vertx.core.json.JsonObject;
import io.vertx.pgclient.PgException;
import org.junit.jupiter.api.Test;

class PgTextTest {
  @Test
  void aNulEscapeInJsonBecomesTheReplacementCharacter() {
    String json = new JsonObject().put("log", "a\0b").put("k\0", "x").encode();
    String clean = PgText.json(json);
    assertFalse(clean.contains("\\u0000"), clean);
    assertEquals("a\uFFFDb", new JsonObject(clean).getString("log"));
    assertEquals("x", new JsonObject(clean).getString("k\uFFFD"));
  }

  @Test
  void anEscapedBackslashBeforeU0000IsLeftAlone() {
    // The text \u0000 typed by a user (a backslash, then "u0000") is not a NUL.
    String json = new JsonObject().put("text", "\\u0000 and \\\0").encode();
    JsonObject clean = new JsonObject(PgText.json(json));
    assertEquals("\\u0000 and \\\uFFFD", clean.getString("text"));
  }

  @Test
  void plainTextLosesItsNuls() {
    assertEquals("a\uFFFDb", PgText.text("a\0b"));
    assertEquals("ok", PgText.text("ok"));
    assertEquals(null, PgText.text(null));
  }

  @Test
  void onlyErrorsInTheDataAreIsolated() {
    assertTrue(PgText.dataError(new PgException("bad", "ERROR", "22P05", null)));
    assertTrue(PgText.dataError(new PgException("dup", "ERROR", "23505", null)));
    assertFalse(PgText.dataError(new PgException("shutting down", "FATAL", "57P01", null)));
    assertFalse(PgText.dataError(new java.net.ConnectException("refused")));
  }
}
