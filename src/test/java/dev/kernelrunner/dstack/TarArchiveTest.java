package dev.kernelrunner.dstack;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayInputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The agent's archive as a dstack run gets it (issue 29): what a run needs and nothing else, well under dstack's
 * default 2 MiB upload limit (server/settings.py:190). At 115 problems the archive is 1.1 MB, about half of it the
 * catalog (a 512-byte header and padding per file): 1.5 MiB leaves room for the next problems, and a catalog that
 * outgrows it needs the archive compressed or its problems sent per job.
 */
class TarArchiveTest {

  @Test
  void theAgentArchiveHoldsWhatARunNeedsWellUnderDstacksLimit() throws Exception {
    byte[] tar = TarArchive.ofFolder(Path.of("remote-agent"));
    List<String> names = names(tar);
    assertTrue(tar.length <= 3 << 19, "the archive is " + tar.length + " bytes");
    assertTrue(names.contains("remote-agent/remote_agent/agent.py"), names.toString());
    assertTrue(names.stream().anyMatch(n -> n.startsWith("remote-agent/problems/")), "the problems go with it");
    assertFalse(names.stream().anyMatch(n -> n.startsWith("remote-agent/selftest/")), "no self-test");
    assertFalse(names.stream().anyMatch(n -> n.startsWith("remote-agent/tests/")), "no tests");
    assertFalse(names.stream().anyMatch(n -> n.contains("__pycache__") || n.endsWith(".pyc")), "no bytecode");
  }

  /** The entry names of a ustar archive. */
  private static List<String> names(byte[] tar) {
    List<String> names = new ArrayList<>();
    ByteArrayInputStream in = new ByteArrayInputStream(tar);
    byte[] header = new byte[512];
    while (in.readNBytes(header, 0, 512) == 512 && header[0] != 0) {
      String name = new String(header, 0, 100, StandardCharsets.US_ASCII).replace("\0", "");
      String prefix = new String(header, 345, 155, StandardCharsets.US_ASCII).replace("\0", "");
      names.add(prefix.isEmpty() ? name : prefix + "/" + name);
      long size = Long.parseLong(new String(header, 124, 11, StandardCharsets.US_ASCII).trim(), 8);
      in.skip((size + 511) / 512 * 512);
    }
    return names;
  }
}
