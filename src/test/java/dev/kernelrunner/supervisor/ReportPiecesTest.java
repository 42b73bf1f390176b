package dev.kernelrunner.supervisor;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.vertx.core.json.JsonObject;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

class ReportPiecesTest {
  private static final byte[] REPORT = new byte[100_000];

  static {
    new Random(7).nextBytes(REPORT);
  }

  /** The pieces as the agent sends them (remote_agent/profiler.py report_pieces), 40,000 bytes each. */
  private static List<JsonObject> pieces(byte[] data, String name) {
    List<JsonObject> pieces = new ArrayList<>();
    int count = (data.length + 39_999) / 40_000;
    for (int i = 0; i < count; i++) {
      byte[] part = Arrays.copyOfRange(data, i * 40_000, Math.min(data.length, (i + 1) * 40_000));
      pieces.add(new JsonObject().put("name", name).put("part", i + 1).put("parts", count).put("size", data.length)
          .put("sha256", ReportPieces.sha256(data)).put("data", Base64.getEncoder().encodeToString(part)));
    }
    return pieces;
  }

  private static JsonObject declared(byte[] data, String name) {
    return new JsonObject().put("name", name).put("size", data.length).put("sha256", ReportPieces.sha256(data));
  }

  private static ReportPieces.Outcome assemble(List<JsonObject> pieces, JsonObject declared) {
    ReportPieces assembly = new ReportPieces();
    pieces.forEach(assembly::add);
    return assembly.assemble(declared);
  }

  @Test
  void piecesInAnyOrderMakeTheAnnouncedFile() {
    List<JsonObject> pieces = pieces(REPORT, "profile.ncu-rep");
    java.util.Collections.reverse(pieces);
    ReportPieces.Outcome outcome = assemble(pieces, declared(REPORT, "profile.ncu-rep"));
    assertTrue(outcome.whole(), outcome.problem());
    assertArrayEquals(REPORT, outcome.content());
    assertEquals("profile.ncu-rep", outcome.name());
  }

  @Test
  void aMissingDoubledOrAlteredPieceSpoilsTheReport() {
    List<JsonObject> missing = pieces(REPORT, "r.ncu-rep");
    missing.remove(1);
    assertTrue(assemble(missing, declared(REPORT, "r.ncu-rep")).problem().contains("missing (2 of 3)"));

    List<JsonObject> doubled = pieces(REPORT, "r.ncu-rep");
    doubled.add(doubled.get(0));
    assertTrue(assemble(doubled, declared(REPORT, "r.ncu-rep")).problem().contains("came twice"));

    List<JsonObject> altered = pieces(REPORT, "r.ncu-rep");
    byte[] other = REPORT.clone();
    other[45_000] ^= 1;
    altered.set(1, pieces(other, "r.ncu-rep").get(1).put("sha256", ReportPieces.sha256(REPORT)));
    assertTrue(assemble(altered, declared(REPORT, "r.ncu-rep")).problem().contains("SHA-256"));

    List<JsonObject> mixed = pieces(REPORT, "r.ncu-rep");
    mixed.set(2, pieces(other, "r.ncu-rep").get(2));
    assertTrue(assemble(mixed, declared(REPORT, "r.ncu-rep")).problem().contains("disagree"));
  }

  @Test
  void onlyTheAnnouncedReportWithAPlainNameIsKept() {
    assertFalse(assemble(pieces(REPORT, "r.ncu-rep"), declared(REPORT, "other.ncu-rep")).whole());
    assertFalse(assemble(pieces(REPORT, "r.ncu-rep"), null).whole());
    assertTrue(assemble(List.of(), declared(REPORT, "r.ncu-rep")).problem().contains("no piece"));
    String header = "a\"; filename=evil";
    assertTrue(assemble(pieces(REPORT, header), declared(REPORT, header)).problem().contains("plain name"));
    assertTrue(assemble(pieces(REPORT, "../r"), declared(REPORT, "../r")).problem().contains("plain name"));
  }

  @Test
  void aReportPastTheBoundIsDroppedWithoutKeepingItsBytes() {
    ReportPieces assembly = new ReportPieces();
    byte[] chunk = new byte[8 * 1024 * 1024];
    String data = Base64.getEncoder().encodeToString(chunk);
    int parts = ReportPieces.MAX_BYTES / chunk.length + 1;
    for (int i = 1; i <= parts; i++) {
      assembly.add(new JsonObject().put("name", "big").put("part", i).put("parts", parts)
          .put("size", (long) parts * chunk.length).put("sha256", "x").put("data", data));
    }
    assertTrue(assembly.assemble(new JsonObject().put("name", "big").put("size", (long) parts * chunk.length)
        .put("sha256", "x")).problem().contains("larger than 64 MiB"));
  }
}
