package dev.kernelrunner.supervisor;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.kernelrunner.model.EventType;
import java.io.StringReader;
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
    String huge = "a".repeat(AgentOutput.MAX_LINE_CHARS + 10);
    StringReader in = new StringReader(huge + "\nsecond\r\nlast");
    StringBuilder buffer = new StringBuilder();
    assertEquals(AgentOutput.MAX_LINE_CHARS, AgentOutput.readLine(in, buffer).length());
    assertEquals("second", AgentOutput.readLine(in, buffer));
    assertEquals("last", AgentOutput.readLine(in, buffer));
    assertNull(AgentOutput.readLine(in, buffer));
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
