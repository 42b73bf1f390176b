package dev.kernelrunner.http;

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
