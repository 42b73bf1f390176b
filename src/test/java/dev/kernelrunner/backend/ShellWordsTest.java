package dev.kernelrunner.backend;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.Test;

/** A quoted word is read back by /bin/sh as exactly that word (a worker run's PUBLIC_URL goes through one). */
class ShellWordsTest {

  @Test
  void theShellReadsBackEveryWordAsItWas() throws Exception {
    for (String word : List.of("https://kr.example.com", "https://kr.example.com/?a=1&b=2;reboot",
        "it's $(id) `id` \"x\"", "two words", "")) {
      Process sh = new ProcessBuilder("/bin/sh", "-c", "printf '%s' " + ShellWords.quote(word)).start();
      String out = new String(sh.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      assertEquals(0, sh.waitFor());
      assertEquals(word, out, ShellWords.quote(word));
    }
    assertEquals("https://kr.example.com", ShellWords.quote("https://kr.example.com"), "safe words stay plain");
  }
}
