package dev.kernelrunner.flow;

import static dev.kernelrunner.support.SseClient.types;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.kernelrunner.support.Processes;
import dev.kernelrunner.support.SseClient;
import dev.kernelrunner.support.SseClient.Frame;
import dev.kernelrunner.support.TestService;
import dev.kernelrunner.support.TestService.Response;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonObject;
import io.vertx.junit5.VertxExtension;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** One GPU slot (LOCAL_MAX_CONCURRENT=1): queue positions, and cancellation in every state. */
@ExtendWith(VertxExtension.class)
class QueueAndCancelTest {
  private static final Duration WAIT = Duration.ofSeconds(30);
  private static TestService service;
  private static String carol;

  @BeforeAll
  static void start(Vertx vertx) throws Exception {
    // The child-process backend (LOCAL_WORKERS=false): its slot is free from the start, and the registry holds
    // each agent's pid.
    service = TestService.start(vertx, Map.of("LOCAL_MAX_CONCURRENT", "1", "MAX_ACTIVE_PER_USER", "10",
        "LOCAL_WORKERS", "false"));
    carol = service.userToken("carol");
  }

  @AfterAll
  static void stop() throws Exception {
    service.close();
  }

  @Test
  void queuePositionsAreSentAndUpdated() throws Exception {
    String first = service.submit(carol, "// agent: ok\n// delay: 1");
    try (SseClient a = service.events(first, carol, Map.of())) {
      // The others are created only once the first holds the slot: created together, the second
      // could rightly see position 1 before the first was dispatched.
      a.nextOf("PROVISIONING", WAIT);
    }
    String second = service.submit(carol, "// agent: ok");
    String third = service.submit(carol, "// agent: ok");
    try (SseClient a = service.events(first, carol, Map.of());
         SseClient b = service.events(second, carol, Map.of());
         SseClient c = service.events(third, carol, Map.of())) {
      List<Frame> fa = a.untilEnd(WAIT);
      List<Frame> fb = b.untilEnd(WAIT);
      List<Frame> fc = c.untilEnd(WAIT);
      assertEquals("BENCHMARKED", fa.get(fa.size() - 1).event());
      assertEquals(0, fa.get(0).data().getInteger("position"));
      assertEquals("PROVISIONING", fa.get(1).event());
      // The second waits at the head of the line, then starts when the first ends.
      assertEquals(List.of("IN_QUEUE", "PROVISIONING"), types(fb.subList(0, 2)));
      assertEquals(0, fb.get(0).data().getInteger("position"));
      // The third has one ahead of it, then none, then starts.
      assertEquals(List.of("IN_QUEUE", "IN_QUEUE", "PROVISIONING"), types(fc.subList(0, 3)));
      assertEquals(1, fc.get(0).data().getInteger("position"));
      assertEquals(0, fc.get(1).data().getInteger("position"));
      assertEquals("BENCHMARKED", fc.get(fc.size() - 1).event());
      // One slot: the second started only after the first had ended.
      assertTrue(fb.get(1).data().getString("at").compareTo(fa.get(fa.size() - 1).data().getString("at")) >= 0);
    }
  }

  @Test
  void usersWaitingForOneGpuTypeTakeTurns() throws Exception {
    String flood = service.userToken("flood");
    String ann = service.userToken("ann");
    String blocker = service.submit(carol, "// agent: hang");
    try (SseClient held = service.events(blocker, carol, Map.of())) {
      held.nextOf("PROVISIONING", WAIT);
    }
    List<String> floods = List.of(service.submit(flood, "// agent: ok"), service.submit(flood, "// agent: ok"),
        service.submit(flood, "// agent: ok"));
    TestService.Response created = service.post("/api/submissions", ann,
        TestService.submission("// agent: ok", "benchmark").encode());
    assertEquals(201, created.status(), created.body());
    assertEquals(1, created.json().getInteger("position"), "behind flood's first, not its three");
    String annId = created.json().getString("id");
    assertEquals(202, service.post("/api/submissions/" + blocker + "/cancel", carol, "{}").status());
    List<String> started = new java.util.ArrayList<>();
    for (String id : List.of(floods.get(0), floods.get(1), floods.get(2), annId)) {
      started.add(service.awaitFinished(id, WAIT).getString("started_at") + " " + id);
    }
    java.util.Collections.sort(started);
    assertEquals(List.of(floods.get(0), annId, floods.get(1), floods.get(2)),
        started.stream().map(line -> line.substring(line.indexOf(' ') + 1)).toList());
  }

  @Test
  void cancelWhileRunningKillsTheProcessTreeAndFreesTheSlot() throws Exception {
    String running = service.submit(carol, "// agent: ok\n// delay: 5");
    String queued = service.submit(carol, "// agent: ok");
    long agentPid;
    long childPid;
    try (SseClient stream = service.events(running, carol, Map.of())) {
      Frame compiling = stream.nextOf("COMPILING", WAIT);
      agentPid = compiling.data().getLong("agent_pid");
      childPid = compiling.data().getLong("child_pid");
      assertTrue(Processes.alive(agentPid) && Processes.alive(childPid));
      assertEquals(agentPid, service.submission(running).getLong("pid"), "the registry recorded the pid");
      long started = System.nanoTime();
      Response cancel = service.post("/api/submissions/" + running + "/cancel", carol, "");
      long tookMillis = (System.nanoTime() - started) / 1_000_000;
      assertEquals(202, cancel.status(), cancel.body());
      assertEquals("CANCELLED", cancel.json().getString("status"));
      assertFalse(Processes.alive(agentPid), "agent gone when the cancel returns");
      assertFalse(Processes.alive(childPid), "its child gone too");
      assertTrue(tookMillis < 2000, "cancel took " + tookMillis + " ms");
      Frame last = stream.nextOf("CANCELLED", WAIT);
      assertEquals("carol", last.data().getString("cancelled_by"));
      assertEquals("owner", last.data().getString("reason"));
      assertNotNull(stream.untilEnd(WAIT));
    }
    JsonObject stored = service.submission(running);
    assertEquals("CANCELLED", stored.getString("status"));
    assertEquals("carol", stored.getString("cancelled_by"));
    assertEquals("owner", stored.getString("cancel_reason"));
    assertEquals("BENCHMARKED", service.awaitFinished(queued, WAIT).getString("status"), "the slot was freed");
  }

  @Test
  void cancelStopsOrphansOfTheAgentToo() throws Exception {
    String id = service.submit(carol, "// agent: orphan");
    long orphan;
    try (SseClient stream = service.events(id, carol, Map.of())) {
      Frame compiling = stream.nextOf("COMPILING", WAIT);
      orphan = compiling.data().getLong("orphan_pid");
      long agent = compiling.data().getLong("agent_pid");
      assertTrue(Processes.alive(orphan));
      assertTrue(ProcessHandle.of(orphan).orElseThrow().parent().map(p -> p.pid() != agent).orElse(true),
          "the orphan's parent is gone: no tree walk from the agent finds it");
      Response cancel = service.post("/api/submissions/" + id + "/cancel", carol, "");
      assertEquals(202, cancel.status(), cancel.body());
      stream.nextOf("CANCELLED", WAIT);
    }
    long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
    while (Processes.alive(orphan) && System.nanoTime() < deadline) {
      Thread.sleep(50);
    }
    assertFalse(Processes.alive(orphan), "the agent's process group went with it");
  }

  @Test
  void cancelWhileQueuedNeverStartsIt() throws Exception {
    String running = service.submit(carol, "// agent: ok\n// delay: 0.5");
    String queued = service.submit(carol, "// agent: ok");
    Response cancel = service.post("/api/submissions/cancel", carol,
        new JsonObject().put("submission_id", queued).encode());
    assertEquals(202, cancel.status(), cancel.body());
    assertEquals("CANCELLED", cancel.json().getString("status"));
    try (SseClient stream = service.events(queued, carol, Map.of())) {
      assertEquals(List.of("IN_QUEUE", "CANCELLED"), types(stream.untilEnd(WAIT)));
    }
    assertEquals("BENCHMARKED", service.awaitFinished(running, WAIT).getString("status"));
    assertEquals(null, service.submission(queued).getString("started_at"));
    // Idempotent: a second cancel says the same.
    Response again = service.post("/api/submissions/" + queued + "/cancel", carol, "");
    assertEquals(202, again.status());
    assertEquals("CANCELLED", again.json().getString("status"));
  }

  @Test
  void cancelAfterFinishIsAConflict() throws Exception {
    String id = service.submit(carol, "// agent: ok");
    service.awaitFinished(id, WAIT);
    Response cancel = service.post("/api/submissions/" + id + "/cancel", carol, "");
    assertEquals(409, cancel.status());
    assertEquals("BENCHMARKED", cancel.json().getString("status"));
    assertEquals("BENCHMARKED", service.submission(id).getString("status"));
  }

  @Test
  void onlyTheOwnerOrAnAdminMayCancel() throws Exception {
    String dave = service.userToken("dave");
    String id = service.submit(carol, "// agent: ok\n// delay: 2");
    assertEquals(404, service.post("/api/submissions/" + id + "/cancel", dave, "").status());
    assertEquals(403, service.post("/api/admin/submissions/" + id + "/cancel", carol, "").status());
    assertEquals(404, service.post("/api/submissions/00000000-0000-0000-0000-000000000000/cancel", carol, "")
        .status());
    Response admin = service.post("/api/admin/submissions/" + id + "/cancel", TestService.ADMIN_TOKEN, "");
    assertEquals(202, admin.status(), admin.body());
    JsonObject stored = service.awaitFinished(id, WAIT);
    assertEquals("CANCELLED", stored.getString("status"));
    assertEquals("admin", stored.getString("cancelled_by"));
    assertEquals("admin", stored.getString("cancel_reason"));
  }

  @Test
  void anAgentIgnoringTermIsKilled() throws Exception {
    String id = service.submit(carol, "// agent: trap_term");
    try (SseClient stream = service.events(id, carol, Map.of())) {
      long agentPid = stream.nextOf("COMPILING", WAIT).data().getLong("agent_pid");
      Response cancel = service.post("/api/submissions/" + id + "/cancel", carol, "");
      assertEquals(202, cancel.status());
      assertFalse(Processes.alive(agentPid), "KILL after the grace period");
      assertEquals(Optional.of("CANCELLED"), stream.untilEnd(WAIT).stream().map(Frame::event)
          .reduce((x, y) -> y));
    }
  }
}
