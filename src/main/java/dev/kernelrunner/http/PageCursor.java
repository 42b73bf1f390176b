package dev.kernelrunner.http;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.nio.charset.StandardCharsets;
import java.time.OffsetDateTime;
import java.util.Base64;
import java.util.Optional;

/**
 * Where a page of a newest-first list ends: the (created_at, key) of its last row, unique even when a batch of
 * rows shares one created_at. Opaque to clients: base64url of {@code <created_at> <key>}.
 */
record PageCursor(OffsetDateTime createdAt, String key) {
  String encode() {
    return Base64.getUrlEncoder().withoutPadding()
        .encodeToString((createdAt + " " + key).getBytes(StandardCharsets.UTF_8));
  }

  /** Asks the store for the rows after this cursor ({@code before_created_at}, {@code before_id}). */
  JsonObject into(JsonObject query) {
    return query.put("before_created_at", createdAt.toString()).put("before_id", key);
  }

  /** The next page's cursor when {@code page} is full: its last row's created_at and {@code keyField}; else null. */
  static String next(JsonArray page, int pageSize, String keyField) {
    if (page.size() < pageSize) {
      return null;
    }
    JsonObject last = page.getJsonObject(page.size() - 1);
    return new PageCursor(OffsetDateTime.parse(last.getString("created_at")), last.getString(keyField)).encode();
  }

  /** The cursor a client sent back, or empty when it is not one of ours. */
  static Optional<PageCursor> decode(String text) {
    try {
      String[] parts = new String(Base64.getUrlDecoder().decode(text), StandardCharsets.UTF_8).split(" ", 2);
      if (parts.length != 2 || parts[1].isEmpty() || parts[1].length() > 64) {
        return Optional.empty();
      }
      return Optional.of(new PageCursor(OffsetDateTime.parse(parts[0]), parts[1]));
    } catch (RuntimeException e) {
      return Optional.empty();
    }
  }
}
