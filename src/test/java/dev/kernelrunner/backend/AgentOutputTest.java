package dev.kernelrunner.backend;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.kernelrunner.model.EventType;
import java.io.ByteArrayInputStream;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.Test;

class AgentOutputTest {

  private static final AgentOutput.EventKey KEY = AgentOutput.EventKey.random();

  private static AgentOutput.Line classify(String line) {
    return AgentOutput.classify(line, KEY);
  }

  private static AgentOutput.Line signed(String json) {
    return classify(AgentOutput.signedLine(KEY, json));
  }

  @Test
  void signedEventLinesParseAndEverythingElseIsALogLine() {
    var event = (AgentOutput.Event) signed("{\"type\": \"CHECKING\", \"total_tests\": 3}");
    assertEquals(EventType.CHECKING, event.type());
    assertEquals(3, event.fields().getInteger("total_tests"));
    assertEquals(new AgentOutput.Log("compiling...", false), classify("compiling..."));
    for (String json : new String[] {"{broken", "[1]", "{\"type\": \"NOPE\"}", "{\"type\": 5}", "{\"status\": \"ERROR\"}"}) {
      assertEquals(new AgentOutput.Log(AgentOutput.signedLine(KEY, json), false), signed(json), json);
    }
    String good = AgentOutput.signedLine(KEY, "{\"type\": \"ERROR\"}");
    assertEquals(new AgentOutput.Log(" " + good, false), classify(" " + good));
  }

  @Test
  void anEventLineWithoutTheRightMacIsAForgedLogLine() {
    String json = "{\"type\": \"BENCHMARKED\", \"avg_runtime_ms\": 0.001}";
    String other = AgentOutput.EventKey.random().sign(json);
    String mac = KEY.sign(json);
    String[] forged = {
        "JSON_EVENT:" + json,                                        // unsigned, as before signing existed
        "JSON_EVENT:" + other + ":" + json,                          // another key
        "JSON_EVENT:" + mac + ":" + json + " ",                      // the text after the MAC changed
        "JSON_EVENT:" + flipFirstDigit(mac) + ":" + json,            // one hex digit changed
        "JSON_EVENT:" + mac.toUpperCase() + ":" + json,             // not the agent's lowercase spelling
        "JSON_EVENT:" + mac.replaceAll("[0-9]", "A") + ":" + json,
        "JSON_EVENT:" + mac.substring(2) + ":" + json,               // short MAC
        "JSON_EVENT:zz" + mac.substring(2) + ":" + json,             // not hex
        "JSON_EVENT:" + KEY.sign("{\"type\": \"CHECKING\"}") + ":" + json,  // a MAC copied from another line
        "JSON_EVENT:"};
    for (String line : forged) {
      assertEquals(new AgentOutput.Log(line, true), classify(line), line);
    }
    assertTrue(signed(json) instanceof AgentOutput.Event);
  }

  @Test
  void aKnownVectorMatchesWhatPythonsHmacComputes() {
    // python3 -c 'import hmac,hashlib,base64; print(hmac.new(base64.b64decode("AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="),
    //   b"{\"type\":\"COMPILING\"}", hashlib.sha256).hexdigest())'
    AgentOutput.EventKey key = AgentOutput.EventKey.of("AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=");
    assertEquals("75355b813f7894b2a0f2b5f53348f48582291fe7512c1d47aaa1770b9216e80d", key.sign("{\"type\":\"COMPILING\"}"));
    assertFalse(key.toString().contains(key.base64()), "the key never reaches a log line through toString");
  }

  @Test
  void aRunWarnsOnceAndKeepsForgedLinesInTheTail() {
    AgentOutput.RunOutput output = new AgentOutput.RunOutput("s-1", KEY, 10);
    assertNull(output.accept("JSON_EVENT:{\"type\": \"BENCHMARKED\"}"));
    assertNull(output.accept("plain"));
    assertEquals(EventType.COMPILING, output.accept(AgentOutput.signedLine(KEY, "{\"type\":\"COMPILING\"}")).type());
    assertEquals(List.of("JSON_EVENT:{\"type\": \"BENCHMARKED\"}", "plain"), output.tail());
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
    assertEquals("JSON_EVENT:{\"type\": \"COMPILING\"}", in.readLine());
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

  private static String flipFirstDigit(String hex) {
    char first = hex.charAt(0);
    return (first == '0' ? '1' : '0') + hex.substring(1);
  }
}
