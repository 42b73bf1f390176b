package dev.kernelrunner.dstack;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.kernelrunner.dstack.RunDecision.Facts;
import dev.kernelrunner.model.EventType;
import io.vertx.core.json.JsonObject;
import java.time.Duration;
import java.util.Random;
import org.junit.jupiter.api.Test;

class RunDecisionTest {
  /** Facts with nothing held and no time waited beyond what the retry budget says. */
  private static Facts facts(boolean started, boolean held, boolean cancelled, boolean timedOut, boolean fleetChecked,
                             Duration retryLeft) {
    return new Facts(started, started, held, Duration.ZERO, cancelled, timedOut ? RunDecision.Limit.PROVISIONING : null,
        fleetChecked, Duration.ZERO, Duration.ZERO, started ? Duration.ofSeconds(1) : null, retryLeft);
  }

  private static final Facts FRESH = facts(false, false, false, false, false, Duration.ofMinutes(5));
  private static final Facts STARTED = facts(true, false, false, false, false, Duration.ofMinutes(5));

  /** A final run as runs/get reports it (latest_job_submission carries the detail). */
  private static RunSnapshot run(String status, String jobStatus, String message, String reason, String reasonMessage,
                                 Integer exit) {
    return RunSnapshot.of(new JsonObject().put("status", status).put("cost", 0.5)
        .put("run_spec", new JsonObject().put("run_name", "kr-x"))
        .put("latest_job_submission", new JsonObject().put("id", "j").put("status", jobStatus)
            .put("status_message", message).put("termination_reason", reason)
            .put("termination_reason_message", reasonMessage).put("exit_status", exit)));
  }

  @Test
  void aMissingFleetIsCheckedOnceThenTakenForNoCapacity() {
    // jobs_submitted.py:1024-1031: what a task with fleets: gets when its fleet is missing.
    RunSnapshot missing = run("failed", "failed", "no capacity", "failed_to_start_due_to_no_capacity",
        "Failed to use specified fleets", null);
    assertTrue(RunDecision.whenFinal(missing, FRESH) instanceof RunDecision.CheckFleetAndRetry);
    Facts checked = facts(false, false, false, false, true, Duration.ofMinutes(5));
    assertTrue(RunDecision.whenFinal(missing, checked) instanceof RunDecision.Retry);
    RunSnapshot noFleets = run("failed", "failed", "no fleets", "failed_to_start_due_to_no_capacity",
        "No matching fleet found. Possible reasons: https://dstack.ai/docs/guides/troubleshooting/#no-fleets", null);
    assertTrue(RunDecision.whenFinal(noFleets, FRESH) instanceof RunDecision.CheckFleetAndRetry);
  }

  @Test
  void noCapacityAndAFullFleetAreRetriedWhileTheBudgetLasts() {
    for (String message : new String[] {"Fleet is at capacity",
        "Failed to provision in fleet 'f': tried 3 of 3 offers, all failed."}) {
      RunSnapshot full = run("failed", "failed", "no capacity", "failed_to_start_due_to_no_capacity", message, null);
      assertTrue(RunDecision.whenFinal(full, FRESH) instanceof RunDecision.Retry, message);
      Facts spent = facts(false, false, false, false, false, Duration.ZERO);
      RunDecision.Next last = RunDecision.whenFinal(full, spent);
      assertEquals(EventType.ERROR, ((RunDecision.Fail) last).type());
      assertTrue(((RunDecision.Fail) last).message().contains(message));
    }
  }

  @Test
  void exitCodesAndLimitsMapToTheirEvents() {
    RunDecision.Fail crashed = (RunDecision.Fail) RunDecision.whenFinal(run("failed", "failed", "exited (3)",
        "container_exited_with_error", null, 3), STARTED);
    assertEquals(EventType.RUNTIME_ERROR, crashed.type());
    assertTrue(crashed.message().contains("3"));
    // The runner reports Go's ExitCode(): -1 when a signal ended the process (executor.go:263).
    RunDecision.Fail signalled = (RunDecision.Fail) RunDecision.whenFinal(run("failed", "failed", "exited (-1)",
        "container_exited_with_error", null, -1), STARTED);
    assertTrue(signalled.message().contains("killed by a signal"), signalled.message());
    RunDecision.Fail tooLong = (RunDecision.Fail) RunDecision.whenFinal(run("terminated", "terminated", "terminated",
        "max_duration_exceeded", null, null), STARTED);
    assertEquals(EventType.TIME_LIMIT_EXCEEDED, tooLong.type());
    assertEquals(new RunDecision.Exit(0), RunDecision.whenFinal(run("done", "done", "exited (0)", "done_by_runner",
        null, 0), STARTED));
    RunDecision.Fail other = (RunDecision.Fail) RunDecision.whenFinal(run("failed", "failed", "error",
        "instance_unreachable", null, null), STARTED);
    assertEquals(EventType.ERROR, other.type());
    assertTrue(other.message().contains("instance_unreachable"));
  }

  @Test
  void whatTheAgentSaidOrACancelComesFirst() {
    RunSnapshot crashed = run("failed", "failed", "exited (1)", "container_exited_with_error", null, 1);
    assertEquals(new RunDecision.Deliver(1), RunDecision.whenFinal(crashed,
        facts(true, true, false, false, false, Duration.ZERO)));
    assertEquals(new RunDecision.Exit(null), RunDecision.whenFinal(run("terminated", "terminated", "stopped",
        "terminated_by_user", null, null), facts(true, false, true, false, false, Duration.ZERO)));
    assertEquals(EventType.TIME_LIMIT_EXCEEDED, ((RunDecision.Fail) RunDecision.whenFinal(run("terminated",
        "terminated", "stopped", "terminated_by_user", null, null),
        facts(false, false, false, true, false, Duration.ZERO))).type());
  }

  @Test
  void runNamesAreAlwaysValidForDstack() {
    RunNames names = new RunNames("abcd-", new Random(1));
    String id = "0f8fad5b-d9cb-469f-a165-70867728950e";
    for (int i = 0; i < 100; i++) {
      String name = names.next(id);
      assertTrue(RunNames.VALID.matcher(name).matches(), name);
      assertTrue(name.length() <= 41 && names.isOurs(name), name);
    }
  }

  @Test
  void errorsAreSortedByWhatTheCallerDoes() {
    assertEquals(DstackError.Kind.NOT_FOUND, DstackError.of("runs/get", 400,
        "{\"detail\": [{\"msg\": \"Run not found\", \"code\": \"resource_not_exists\"}]}").kind());
    DstackError token = DstackError.of("runs/get", 403, "{\"detail\": {\"msg\": \"Invalid token\", \"code\": null}}");
    assertEquals(DstackError.Kind.FORBIDDEN, token.kind());
    assertTrue(token.getMessage().contains("Invalid token"));
    DstackError schema = DstackError.of("runs/apply", 422, "{\"detail\": [{\"type\": \"extra_forbidden\", "
        + "\"loc\": [\"body\", \"x\"], \"msg\": \"Extra inputs are not permitted\"}]}");
    assertEquals(DstackError.Kind.REJECTED, schema.kind());
    assertTrue(schema.getMessage().contains("[\"body\",\"x\"]"), schema.getMessage());
    assertEquals(DstackError.Kind.SERVER, DstackError.of("runs/get", 502, "<html>bad gateway</html>").kind());
    assertEquals(DstackApi.Version.parse("0.19.33"), DstackApi.MIN_SERVER_VERSION);
    assertTrue(DstackApi.Version.parse("0.21.2rc1").compareTo(DstackApi.CLIENT_VERSION) > 0);
  }

  /** Facts of a run not yet heard from: the provisioning clock, the pull clock, the running clock (or null). */
  private static Facts quiet(Duration waited, Duration pulling, Duration running, boolean cancelled,
                             RunDecision.Limit hit) {
    return new Facts(false, false, false, Duration.ZERO, cancelled, hit, false, waited, pulling, running,
        Duration.ZERO);
  }

  private static Facts agent(boolean held, Duration heldFor) {
    return new Facts(true, true, held, heldFor, false, null, false, Duration.ZERO, Duration.ZERO, Duration.ofHours(1),
        Duration.ZERO);
  }

  @Test
  void aRunThatIsNotFinalIsStoppedOnlyPastALimitOfItsOwnPhaseOrLongAfterTheAgentEnded() {
    Duration limit = Duration.ofMinutes(10);
    Duration grace = Duration.ofSeconds(30);
    Duration past = Duration.ofMinutes(11);
    Duration within = Duration.ofMinutes(9);
    assertEquals(new RunDecision.Stop(RunDecision.Limit.PROVISIONING),
        RunDecision.whileRunning(quiet(past, Duration.ZERO, null, false, null), limit, grace));
    assertEquals(new RunDecision.Poll(), RunDecision.whileRunning(quiet(within, Duration.ZERO, null, false, null),
        limit, grace));
    // The image pull is not provisioning: its own clock, with a limit as long.
    assertEquals(new RunDecision.Poll(), RunDecision.whileRunning(quiet(within, within, null, false, null), limit,
        grace), "9 minutes for a machine and 9 of pulling are within both");
    assertEquals(new RunDecision.Stop(RunDecision.Limit.PULL),
        RunDecision.whileRunning(quiet(within, past, null, false, null), limit, grace));
    // Running by dstack's word with no log at all: not provisioning, but a log storage that serves nothing.
    assertEquals(new RunDecision.Poll(), RunDecision.whileRunning(quiet(within, Duration.ZERO, within, false, null),
        limit, grace));
    assertEquals(new RunDecision.Stop(RunDecision.Limit.NO_LOG),
        RunDecision.whileRunning(quiet(within, Duration.ZERO, past, false, null), limit, grace));
    assertEquals(new RunDecision.Poll(), RunDecision.whileRunning(quiet(past, past, past, true, null), limit, grace),
        "already stopping");
    assertEquals(new RunDecision.Poll(), RunDecision.whileRunning(quiet(past, past, past, false,
        RunDecision.Limit.PULL), limit, grace), "stopped once");
    assertEquals(new RunDecision.Poll(), RunDecision.whileRunning(agent(false, Duration.ZERO), limit, grace),
        "the agent's time counts");
    assertEquals(new RunDecision.Stop(null), RunDecision.whileRunning(agent(true, Duration.ofSeconds(31)), limit,
        grace));
    assertEquals(new RunDecision.Poll(), RunDecision.whileRunning(agent(true, Duration.ofSeconds(5)), limit, grace));
  }

  @Test
  void aRunEndedAtALimitOrByTheLogQuotaOrWithNoLogSaysWhich() {
    RunSnapshot aborted = run("terminated", "aborted", "aborted", "aborted_by_user", null, null);
    RunDecision.Fail pull = (RunDecision.Fail) RunDecision.whenFinal(aborted, quiet(Duration.ZERO,
        Duration.ofMinutes(11), null, false, RunDecision.Limit.PULL));
    assertEquals(EventType.TIME_LIMIT_EXCEEDED, pull.type());
    assertTrue(pull.message().contains("image"), pull.message());
    RunDecision.Fail silent = (RunDecision.Fail) RunDecision.whenFinal(aborted, quiet(Duration.ZERO, Duration.ZERO,
        Duration.ofMinutes(11), false, RunDecision.Limit.NO_LOG));
    assertEquals(EventType.ERROR, silent.type());
    assertTrue(silent.message().contains("DSTACK_LOG_STORAGE"), silent.message());
    // A run that ran and ended without one log event: not a clean exit.
    RunDecision.Fail done = (RunDecision.Fail) RunDecision.whenFinal(run("done", "done", "exited (0)",
        "done_by_runner", null, 0), quiet(Duration.ZERO, Duration.ZERO, Duration.ofSeconds(5), false, null));
    assertTrue(done.message().contains("log storage"), done.message());
    // executor.go:248-256: killed by the runner at the server's log quota.
    RunDecision.Fail quota = (RunDecision.Fail) RunDecision.whenFinal(run("failed", "failed", "error",
        "log_quota_exceeded", "Job log output exceeded the hourly quota of 52428800 bytes", null), STARTED);
    assertEquals(EventType.RUNTIME_ERROR, quota.type());
    assertTrue(quota.message().startsWith("dstack killed the job because its output passed the dstack server's "
        + "per-job log quota (log_quota_exceeded: Job log output exceeded the hourly quota of 52428800 bytes)"),
        quota.message());
  }
}
