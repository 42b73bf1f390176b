package dev.kernelrunner.supervisor;

import io.vertx.core.json.JsonObject;
import java.io.ByteArrayOutputStream;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Base64;
import java.util.HexFormat;
import java.util.TreeMap;
import java.util.regex.Pattern;

/**
 * The pieces of one run's profiler report ({@code PROFILE_REPORT} events: {@code name, part, parts, size, sha256,
 * data}), put together once the run says it is done ({@code PROFILED}'s {@code report}). Only a report whose
 * pieces all agree, are all there, once each, and whose bytes have the announced size and SHA-256 is whole; the
 * agent signed every piece, so a mismatch is a bug or a lost log line, never user code. Bounded in memory.
 */
final class ReportPieces {
  /** Larger reports are not kept (the agent sends none above 48 MiB). */
  static final int MAX_BYTES = 64 * 1024 * 1024;
  /** The name becomes a download's file name: plain characters only. */
  private static final Pattern NAME = Pattern.compile("[A-Za-z0-9][A-Za-z0-9._-]{0,99}");

  /** A whole report, or why there is none. */
  record Outcome(String name, String sha256, byte[] content, String problem) {
    boolean whole() {
      return problem == null;
    }

    static Outcome missing(String problem) {
      return new Outcome(null, null, null, problem);
    }
  }

  private final TreeMap<Integer, byte[]> parts = new TreeMap<>();
  private JsonObject header;
  private long bytes;
  private String problem;

  /** Takes one piece; a piece that contradicts the others spoils the report (said by {@link #assemble}). */
  void add(JsonObject piece) {
    if (problem != null) {
      return;
    }
    JsonObject head = new JsonObject().put("name", piece.getValue("name")).put("parts", piece.getValue("parts"))
        .put("size", piece.getValue("size")).put("sha256", piece.getValue("sha256"));
    if (header == null) {
      header = head;
    } else if (!header.equals(head)) {
      problem = "the report's pieces disagree on its name, size or hash";
      return;
    }
    Object part = piece.getValue("part");
    Object data = piece.getValue("data");
    if (!(part instanceof Integer number) || !(data instanceof String text)) {
      problem = "a report piece without a part number or data";
      return;
    }
    byte[] decoded;
    try {
      decoded = Base64.getDecoder().decode(text);
    } catch (IllegalArgumentException e) {
      problem = "a report piece whose data is not base64";
      return;
    }
    bytes += decoded.length;
    if (bytes > MAX_BYTES) {
      problem = "the report is larger than " + MAX_BYTES / (1024 * 1024) + " MiB";
      parts.clear();
      return;
    }
    if (parts.put(number, decoded) != null) {
      problem = "report piece " + number + " came twice";
    }
  }

  /** The report that {@code declared} (PROFILED's {@code report}: name, size, sha256) announces, from the pieces. */
  Outcome assemble(JsonObject declared) {
    if (declared == null) {
      return Outcome.missing("the agent sent no report");
    }
    if (problem != null) {
      return Outcome.missing(problem);
    }
    if (header == null) {
      return Outcome.missing("no piece of the report arrived");
    }
    String name = header.getValue("name") instanceof String s ? s : "";
    Object count = header.getValue("parts");
    Object size = header.getValue("size");
    String sha256 = header.getValue("sha256") instanceof String s ? s : "";
    if (!NAME.matcher(name).matches()) {
      return Outcome.missing("the report's file name is not a plain name");
    }
    if (!name.equals(declared.getValue("name")) || !sha256.equals(declared.getValue("sha256"))
        || !java.util.Objects.equals(size, declared.getValue("size"))) {
      return Outcome.missing("the report's pieces are not the report the run announced");
    }
    if (!(count instanceof Integer n) || parts.size() != n || parts.firstKey() != 1 || parts.lastKey() != n) {
      return Outcome.missing("pieces of the report are missing (" + parts.size() + " of " + count + ")");
    }
    ByteArrayOutputStream out = new ByteArrayOutputStream((int) bytes);
    parts.values().forEach(out::writeBytes);
    byte[] content = out.toByteArray();
    if (!(size instanceof Number announced) || announced.longValue() != content.length) {
      return Outcome.missing("the report has " + content.length + " bytes, not the " + size + " announced");
    }
    if (!sha256(content).equals(sha256)) {
      return Outcome.missing("the report's bytes do not have the announced SHA-256");
    }
    return new Outcome(name, sha256, content, null);
  }

  static String sha256(byte[] content) {
    try {
      return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(content));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("SHA-256 is part of every Java runtime", e);
    }
  }
}
