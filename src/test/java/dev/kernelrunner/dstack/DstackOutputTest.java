package dev.kernelrunner.dstack;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.kernelrunner.dstack.DstackOutput.RunState;
import io.vertx.core.json.DecodeException;
import io.vertx.core.json.JsonObject;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/** Parsing the CLI's output formats, as shared/reference/dstack-cli.md describes them. */
class DstackOutputTest {

  @Test
  void jsonAfterTheUpdateBanner() {
    String out = "A new version of dstack is available: 0.21.9\nRun `pip install dstack==0.21.9` to update\n"
        + "{\n  \"status\": \"running\", \"run_spec\": {\"run_name\": \"kr-1\"}\n}\n";
    assertEquals("running", DstackOutput.json(out).getString("status"));
    assertThrows(DecodeException.class, () -> DstackOutput.json("no json here {at all"));
  }

  @Test
  void errorLinesCarryTheMessage() {
    assertEquals(Optional.of("Run kr-9 not found"), DstackOutput.error("[error]Run kr-9 not found\n", ""));
    assertEquals(Optional.of("SSH client not found."), DstackOutput.error("", "  [error] SSH client not found.\n"));
    assertTrue(DstackOutput.error("Run kr-1 submitted, detaching...", "").isEmpty());
  }

  @Test
  void runStateFromJson() {
    JsonObject run = new JsonObject("""
        {"status": "failed", "status_message": "exited (1)", "termination_reason": "job_failed", "cost": 0.42,
         "run_spec": {"run_name": "kr-abc-1"},
         "latest_job_submission": {"status": "failed", "exit_status": 1,
           "termination_reason": "container_exited_with_error", "termination_reason_message": "exit code 1",
           "job_provisioning_data": {"backend": "amddevcloud", "price": 1.99,
             "instance_type": {"name": "gpu-mi300x1-192gb"}}}}""");
    RunState state = DstackOutput.runState(run);
    assertEquals("kr-abc-1", state.name());
    assertTrue(state.isFinal());
    assertEquals(1, state.exitStatus());
    assertEquals("container_exited_with_error", state.jobTerminationReason());
    assertEquals("amddevcloud", state.backend());
    assertEquals("gpu-mi300x1-192gb", state.instance());
    assertEquals(1.99, state.price());
    assertEquals(0.42, state.cost());
    RunState pending = DstackOutput.runState(new JsonObject().put("status", "submitted")
        .put("run_spec", new JsonObject().put("run_name", "x")));
    assertFalse(pending.isFinal());
    assertNull(pending.exitStatus());
  }

  @Test
  void tablesOfEveryVersion() {
    String v019 = """
         NAME        BACKEND      RESOURCES                 PRICE   STATUS        SUBMITTED
         kr-a-1      amddevcloud  2xCPU, 8GB, 1xMI300X      $1.99   exited (1)    9 mins ago
         kr-b-1      amddevcloud  2xCPU, 8GB, 1xMI300X      $1.99   running       now
            replica=0 job=0                                         running       now
         kr-c-1                                                     no offers     1 min ago
        """;
    List<Map<String, String>> rows = DstackOutput.table(v019);
    assertEquals(3, rows.size(), rows.toString());
    assertEquals("exited (1)", rows.get(0).get("STATUS"));
    assertEquals("2xCPU, 8GB, 1xMI300X", rows.get(0).get("RESOURCES"));
    RunState failed = DstackOutput.runState(rows.get(0));
    assertEquals("failed", failed.status());
    assertEquals(1, failed.exitStatus());
    assertEquals(1.99, failed.price());
    assertEquals("running", DstackOutput.runState(rows.get(1)).status());
    assertEquals("failed", DstackOutput.runState(rows.get(2)).status());
    assertEquals("no offers", DstackOutput.runState(rows.get(2)).statusMessage());

    String verbose = """
         NAME     BACKEND      GPU            INSTANCE TYPE       PRICE  STATUS      SUBMITTED  ERROR
         kr-d-1   amddevcloud  MI300X:192GB   gpu-mi300x1-192gb   $1.99  exited (0)  now
        """;
    Map<String, String> row = DstackOutput.table(verbose).get(0);
    assertEquals("gpu-mi300x1-192gb", row.get("INSTANCE TYPE"));
    RunState done = DstackOutput.runState(row);
    assertEquals("done", done.status());
    assertEquals(0, done.exitStatus());
  }

  @Test
  void aTableCutAtEightyColumnsStillNamesTheRun() {
    String cut = """
         NAME            BACKEND      GPU              PRICE   STATUS        SUBMITT…
         kr-0123456789   amddevcloud  MI300X:192GB:1   $1.99   provisioni…   now
        """;
    Map<String, String> row = DstackOutput.table(cut).get(0);
    assertEquals("kr-0123456789", row.get("NAME"));
    // A cut status is unknown, so it is never taken for a final one.
    assertEquals("unknown", DstackOutput.runState(row).status());
    assertFalse(DstackOutput.runState(row).isFinal(), "a cut status is never taken for a final one");
    assertTrue(DstackOutput.isCut(row.get("STATUS")));
  }
}
