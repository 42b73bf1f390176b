package dev.kernelrunner.dstack;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.List;
import java.util.Set;
import java.util.stream.Stream;

/**
 * The file archives dstack sends with a run: an uncompressed tar whose entries start with the archived folder's
 * (or file's) own name (utils/files.py:12-70 {@code create_file_archive}); the runner renames that first component
 * to the destination's last one when it extracts (runner/internal/runner/executor/files.go:19, 84-90). Entries are
 * sorted and carry no times or owners, so the same content always gives the same bytes, hence the same hash, and
 * dstack keeps one copy ({@code files/get_archive_by_hash}).
 */
public final class TarArchive {
  private static final int BLOCK = 512;
  /** Never sent with the agent: Python's caches. */
  private static final Set<String> SKIPPED = Set.of("__pycache__", ".pytest_cache");
  /**
   * Top-level folders of the agent that a run never uses: its self-test (the device scripts, kept with their
   * evidence under docs/) and its tests. dstack keeps every archive it is sent (server/services/files.py has no
   * delete) and takes 2 MiB a request by default (server/settings.py:190, routers/files.py:53-64).
   */
  private static final Set<String> NOT_SHIPPED = Set.of("selftest", "tests");

  private TarArchive() {}

  /** One file as {@code name}. */
  public static byte[] ofFile(String name, byte[] content) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    entry(out, name, content, 0600, false);
    return finish(out);
  }

  /** A folder and everything under it (Python caches left out), as {@code <folder name>/...}. Blocking. */
  public static byte[] ofFolder(Path folder) throws IOException {
    Path root = folder.toAbsolutePath().normalize();
    String top = root.getFileName().toString();
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    List<Path> paths;
    try (Stream<Path> walk = Files.walk(root)) {
      paths = walk.filter(p -> root.relativize(p).toString().isEmpty() || !skipped(root.relativize(p)))
          .sorted().toList();
    }
    for (Path path : paths) {
      String relative = root.relativize(path).toString();
      String name = relative.isEmpty() ? top : top + "/" + relative;
      if (Files.isDirectory(path)) {
        entry(out, name + "/", new byte[0], 0755, true);
      } else if (Files.isRegularFile(path)) {
        boolean executable = Files.getPosixFilePermissions(path).contains(PosixFilePermission.OWNER_EXECUTE);
        entry(out, name, Files.readAllBytes(path), executable ? 0755 : 0644, false);
      }
    }
    return finish(out);
  }

  public static String sha256(byte[] bytes) {
    try {
      return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(bytes));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("SHA-256 is part of every Java runtime", e);
    }
  }

  private static boolean skipped(Path relative) {
    if (NOT_SHIPPED.contains(relative.getName(0).toString())) {
      return true;
    }
    for (Path part : relative) {
      if (SKIPPED.contains(part.toString()) || part.toString().endsWith(".pyc")) {
        return true;
      }
    }
    return false;
  }

  /** A ustar header (POSIX.1-1988) and the content padded to whole blocks. */
  private static void entry(ByteArrayOutputStream out, String name, byte[] content, int mode, boolean directory) {
    byte[] header = new byte[BLOCK];
    byte[] nameBytes = name.getBytes(StandardCharsets.UTF_8);
    String prefix = "";
    if (nameBytes.length > 100) {
      int split = name.lastIndexOf('/', name.length() - 2);
      prefix = name.substring(0, split);
      nameBytes = name.substring(split + 1).getBytes(StandardCharsets.UTF_8);
      if (nameBytes.length > 100 || prefix.getBytes(StandardCharsets.UTF_8).length > 155) {
        throw new IllegalArgumentException("a path too long for a tar header: " + name);
      }
    }
    System.arraycopy(nameBytes, 0, header, 0, nameBytes.length);
    octal(header, 100, 8, mode);
    octal(header, 108, 8, 0);
    octal(header, 116, 8, 0);
    octal(header, 124, 12, directory ? 0 : content.length);
    octal(header, 136, 12, 0);
    header[156] = (byte) (directory ? '5' : '0');
    System.arraycopy("ustar\u000000".getBytes(StandardCharsets.US_ASCII), 0, header, 257, 8);
    byte[] prefixBytes = prefix.getBytes(StandardCharsets.UTF_8);
    System.arraycopy(prefixBytes, 0, header, 345, prefixBytes.length);
    for (int i = 148; i < 156; i++) {
      header[i] = ' ';
    }
    int sum = 0;
    for (byte b : header) {
      sum += b & 0xff;
    }
    octal(header, 148, 7, sum);
    out.writeBytes(header);
    if (!directory) {
      out.writeBytes(content);
      out.writeBytes(new byte[(BLOCK - content.length % BLOCK) % BLOCK]);
    }
  }

  private static void octal(byte[] header, int offset, int width, long value) {
    String digits = Long.toOctalString(value);
    String padded = "0".repeat(Math.max(0, width - 1 - digits.length())) + digits;
    byte[] bytes = padded.getBytes(StandardCharsets.US_ASCII);
    System.arraycopy(bytes, 0, header, offset, Math.min(bytes.length, width - 1));
    header[offset + width - 1] = 0;
  }

  private static byte[] finish(ByteArrayOutputStream out) {
    out.writeBytes(new byte[2 * BLOCK]);
    return out.toByteArray();
  }
}
