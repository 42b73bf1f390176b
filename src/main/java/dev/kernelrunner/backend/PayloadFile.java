package dev.kernelrunner.backend;

import io.vertx.core.json.JsonObject;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;

/** The payload a run's agent reads: {@code <runs dir>/<submission id>/payload.json}, readable by its owner only. */
public final class PayloadFile {
  private PayloadFile() {}

  /** Writes the payload and answers its path. Blocking. */
  public static Path write(Path runsDir, JsonObject payload) throws IOException {
    Path dir = runsDir.resolve(payload.getString("submission_id"));
    Files.createDirectories(dir);
    Path file = dir.resolve("payload.json");
    Files.deleteIfExists(file);
    // Created with its final permissions, so that it is never readable by others, not even for a moment.
    Files.createFile(file, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
    Files.writeString(file, payload.encode(), StandardOpenOption.TRUNCATE_EXISTING);
    return file;
  }
}
