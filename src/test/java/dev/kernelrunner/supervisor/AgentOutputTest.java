package dev.kernelrunner.supervisor;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.kernelrunner.model.EventType;
import java.io.ByteArrayInputStream;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.Test;

class AgentOutputTest {

  @Test
  void eventLinesParseAndEverythingElseIsNot() {
    var event = AgentOutput.parse("JSON_EVENT:{\"type\": \"CHECKING\", \"total_tests\": 3}").orElseThrow();
    assertEquals(EventType.CHECKING, event.type());
    assertEquals(3, event.fields().getInteger("total_tests"));
    assertEquals(EventType.COMPILING, AgentOutput.parse("JSON_EVENT:{\"status\":\"COMPILING\"}").orElseThrow().type());
    assertTrue(AgentOutput.parse("compiling...").isEmpty());
    assertTrue(AgentOutput.parse("JSON_EVENT:{broken").isEmpty());
    assertTrue(AgentOutput.parse("JSON_EVENT:[1]").isEmpty());
    assertTrue(AgentOutput.parse("JSON_EVENT:{\"type\": \"NOPE\"}").isEmpty());
    assertTrue(AgentOutput.parse("JSON_EVENT:{\"type\": 5}").isEmpty());
    assertTrue(AgentOutput.parse(" JSON_EVENT:{\"type\": \"ERROR\"}").isEmpty());
  }

  @Test
  void longLinesAreCutAndCrlfTrimmed() throws Exception {
    String huge = "a".repeat(AgentOutput.MAX_LINE_BYTES + 10);
    AgentOutput.LineReader in = reader(huge + "\nsecond\r\nlast");
    assertEquals(AgentOutput.MAX_LINE_BYTES, in.readLine().length());
    assertEquals("second", in.readLine());
    assertEquals("last", in.readLine());
    assertNull(in.readLine());
  }

  @Test
  void linesSplitAcrossReadsAndMultiByteCharactersArriveWhole() throws Exception {
    // A stream that hands out 3 bytes at a time, so lines and characters straddle reads.
    byte[] bytes = "é\u00e9 ünïcode line\n\nJSON_EVENT:{\"type\": \"COMPILING\"}\n".getBytes(StandardCharsets.UTF_8);
    InputStream trickle = new ByteArrayInputStream(bytes) {
      @Override
      public synchronized int read(byte[] b, int off, int len) {
        return super.read(b, off, Math.min(len, 3));
      }
    };
    AgentOutput.LineReader in = new AgentOutput.LineReader(trickle);
    assertEquals("éé ünïcode line", in.readLine());
    assertEquals("", in.readLine());
    assertEquals(EventType.COMPILING, AgentOutput.parse(in.readLine()).orElseThrow().type());
    assertNull(in.readLine());
  }

  private static AgentOutput.LineReader reader(String text) {
    return new AgentOutput.LineReader(new ByteArrayInputStream(text.getBytes(StandardCharsets.UTF_8)));
  }

  @Test
  void logTailKeepsTheLastLines() {
    AgentOutput.LogTail tail = new AgentOutput.LogTail(2);
    tail.add("one");
    tail.add("two");
    tail.add("three");
    assertEquals(List.of("two", "three"), tail.lines());
  }
}
