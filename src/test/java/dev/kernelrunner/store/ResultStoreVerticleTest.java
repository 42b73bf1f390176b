package dev.kernelrunner.store;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.kernelrunner.bus.Addresses;
import dev.kernelrunner.bus.Failures;
import dev.kernelrunner.bus.LocalCodec;
import dev.kernelrunner.model.EventAppend;
import dev.kernelrunner.model.EventFrame;
import dev.kernelrunner.model.EventType;
import dev.kernelrunner.model.EventWrite;
import dev.kernelrunner.model.Unfinished;
import dev.kernelrunner.model.NewEvent;
import dev.kernelrunner.support.TestDatabase;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.vertx.core.Vertx;
import io.vertx.core.eventbus.ReplyException;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.pgclient.PgConnectOptions;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.Statement;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The result store deployed alone on a fresh PostgreSQL database, driven through its bus addresses as the tracker
 * drives it: a create answers the first stored event (IN_QUEUE, seq 1) and the row is unfinished, and a user at
 * the limit of unfinished submissions is refused (429) until one ends; appends store events in order with
 * consecutive seqs, a terminal one finishes the row, and nothing is appended after the end (409); a re-queue stores
 * its IN_QUEUE event and counts the restart in one transaction, and is refused once the submission has finished;
 * a timing verdict (VERIFIED) is stored once, only after a BENCHMARKED whose timing is pending, and updates the
 * stored result; a board shows only results that pass every check, and a flag that is no boolean neither ranks nor
 * breaks its read; a malformed submission id is refused with 404, never a 500 (a malformed list cursor still gets a
 * 500: that test is disabled, a known bug).
 */
class ResultStoreVerticleTest {
  private Vertx vertx;
  private String databaseUrl;

  @BeforeEach
  void deploy() throws Exception {
    vertx = Vertx.vertx();
    databaseUrl = TestDatabase.freshDatabase();
    // As App registers them: these bodies travel as they are.
    LocalCodec.register(vertx.eventBus(), EventAppend.class, EventAppend.Stored.class, EventWrite.class,
        EventFrame.class, Unfinished.class, Unfinished.Asked.class);
    vertx.deployVerticle(new ResultStoreVerticle(databaseUrl, 4, new SimpleMeterRegistry()))
        .toCompletionStage().toCompletableFuture().get(60, TimeUnit.SECONDS);
  }

  @AfterEach
  void close() throws Exception {
    vertx.close().toCompletionStage().toCompletableFuture().get(30, TimeUnit.SECONDS);
  }

  @Test
  void aCreateAnswersItsFirstEventAndTheRowIsUnfinishedUntilItsUserIsAtTheLimit() throws Exception {
    String id = UUID.randomUUID().toString();
    EventFrame first = create(id, "alice", "check", 3, 1);
    assertEquals(id, first.submissionId(), "the first event is the new submission's");
    assertEquals(1, first.seq(), "the first event has seq 1");
    assertEquals(EventType.IN_QUEUE, first.type(), "the first event is IN_QUEUE");
    assertEquals(new JsonObject().put("position", 3), first.fields(), "the first event carries the queue position");

    JsonObject row = get(id);
    assertEquals("IN_QUEUE", row.getString("status"), "a new submission is IN_QUEUE");
    assertEquals(1, row.getInteger("last_seq"), "the row's last seq is its first event's");
    assertEquals(0, row.getInteger("restart_count"), "a new submission has not been restarted");
    assertEquals("alice", row.getString("user_id"), "the row is its user's");
    assertEquals("leaky-relu", row.getString("problem"), "the row keeps the problem");
    assertEquals("check", row.getString("mode"), "the row keeps the mode");
    assertTrue(row.getBoolean("cancel_on_disconnect"), "the row keeps cancel_on_disconnect");
    assertNull(row.getString("finished_at"), "a new submission has not finished");
    assertNull(row.getString("started_at"), "a new submission has not started");
    assertFalse(row.containsKey("code"), "code is only shown when asked for");
    assertEquals("__global__ void k() {}", ask(Addresses.STORE_SUBMISSION_GET,
        new JsonObject().put("id", id).put("include_code", true), JsonObject.class).getString("code"),
        "include_code shows the stored code");
    assertEquals(first.at().toInstant(), Instant.parse(row.getString("created_at")),
        "the first event is stored with the row, at its created_at");
    assertEquals(List.of(id), ids(Addresses.STORE_SUBMISSION_UNFINISHED), "the new submission is unfinished");

    List<JsonObject> events = eventsAfter(id, 0);
    assertEquals(1, events.size(), "one event is stored: " + events);
    assertEquals(new JsonObject().put("position", 3).put("submission_id", id).put("seq", 1)
        .put("status", "IN_QUEUE").put("at", first.at().toString()), events.get(0), "the stored first event");

    String refused = UUID.randomUUID().toString();
    assertEquals(Failures.TOO_MANY, failure(Addresses.STORE_SUBMISSION_CREATE, createBody(refused, "alice",
        "check", 4, 1)), "a user at max_active 1 with one unfinished submission is refused");
    assertEquals(Failures.NOT_FOUND, failure(Addresses.STORE_SUBMISSION_GET, new JsonObject().put("id", refused)),
        "a refused create stores no row");
    assertEquals(1, create(UUID.randomUUID().toString(), "bob", "check", 0, 1).seq(),
        "another user's limit is their own");
    assertEquals(Failures.NOT_FOUND, failure(Addresses.STORE_SUBMISSION_GET,
        new JsonObject().put("id", UUID.randomUUID().toString())), "an unknown submission is 404");
  }

  @Test
  void appendsStoreEventsInOrderAndATerminalEventFinishesTheRow() throws Exception {
    String id = UUID.randomUUID().toString();
    create(id, "carol", "check", 0, 1);

    List<EventFrame> progress = append(id, progress(EventType.PROVISIONING), progress(EventType.COMPILING),
        progress(EventType.CHECKING));
    assertEquals(List.of(2, 3, 4), progress.stream().map(EventFrame::seq).toList(), "consecutive seqs after 1");
    assertEquals(List.of(EventType.PROVISIONING, EventType.COMPILING, EventType.CHECKING),
        progress.stream().map(EventFrame::type).toList(), "the frames come back in the order sent");
    JsonObject running = get(id);
    assertEquals("CHECKING", running.getString("status"), "the status is the last status-changing event's");
    assertEquals(4, running.getInteger("last_seq"), "last_seq follows the appends");
    assertNotNull(running.getString("started_at"), "PROVISIONING starts the submission");
    assertNull(running.getString("finished_at"), "progress does not finish the submission");

    JsonObject summary = new JsonObject().put("passed", true).put("tests", 2);
    List<EventFrame> end = append(id, progress(EventType.TEST_RESULT, new JsonObject().put("test_id", 1)),
        progress(EventType.TEST_RESULT, new JsonObject().put("test_id", 2)), terminal(EventType.CHECKED, summary));
    assertEquals(List.of(5, 6, 7), end.stream().map(EventFrame::seq).toList(), "the seqs go on from the last");
    assertEquals(summary, end.get(2).fields(), "the terminal frame carries its fields");

    JsonObject finished = get(id);
    assertEquals("CHECKED", finished.getString("status"), "the terminal event's type is the final status");
    assertEquals(7, finished.getInteger("last_seq"), "last_seq is the terminal event's");
    assertNotNull(finished.getString("finished_at"), "a terminal event sets finished_at");
    assertEquals(summary, finished.getJsonObject("result"), "the terminal event's result is stored on the row");
    assertEquals(List.of(), ids(Addresses.STORE_SUBMISSION_UNFINISHED), "a finished submission is not unfinished");

    List<JsonObject> events = eventsAfter(id, 0);
    assertEquals(List.of(1, 2, 3, 4, 5, 6, 7), events.stream().map(e -> e.getInteger("seq")).toList(),
        "every event is stored once, in order");
    assertEquals(List.of("IN_QUEUE", "PROVISIONING", "COMPILING", "CHECKING", "TEST_RESULT", "TEST_RESULT",
        "CHECKED"), events.stream().map(e -> e.getString("status")).toList(), "the stored types, in order");
    assertEquals(2, events.get(5).getInteger("test_id"), "an event's fields are stored with it");
    assertEquals(List.of(6, 7), eventsAfter(id, 5).stream().map(e -> e.getInteger("seq")).toList(),
        "events.after gives only the later seqs");
    JsonObject withResults = ask(Addresses.STORE_SUBMISSION_GET,
        new JsonObject().put("id", id).put("include_results", true), JsonObject.class);
    assertEquals(new JsonArray().add(new JsonObject().put("test_id", 1)).add(new JsonObject().put("test_id", 2)),
        withResults.getJsonArray("test_results"), "include_results lists the TEST_RESULT events");

    assertEquals(Failures.CONFLICT, failure(Addresses.STORE_EVENTS_APPEND,
        new EventAppend(id, List.of(progress(EventType.COMPILING)))), "a progress append after the end is 409");
    assertEquals(Failures.CONFLICT, failure(Addresses.STORE_EVENTS_APPEND,
        new EventAppend(id, List.of(terminal(EventType.ERROR, new JsonObject())))), "an end after the end is 409");
    JsonObject after = get(id);
    assertEquals(7, after.getInteger("last_seq"), "a refused append takes no seq");
    assertEquals("CHECKED", after.getString("status"), "a refused append changes no status");
    assertEquals(finished.getString("finished_at"), after.getString("finished_at"), "finished_at stays");
    assertEquals(7, eventsAfter(id, 0).size(), "a refused append stores no event");

    assertEquals(1, create(UUID.randomUUID().toString(), "carol", "check", 0, 1).seq(),
        "the end frees the user's one unfinished slot (max_active 1)");
  }

  @Test
  void aRequeueStoresItsEventAndCountsTheRestartTogetherAndNotAfterTheEnd() throws Exception {
    String id = UUID.randomUUID().toString();
    create(id, "dave", "benchmark", 0, 5);
    assertEquals(1, ask(Addresses.STORE_SUBMISSION_SET_RUN, new JsonObject().put("submission_id", id)
        .put("backend", "dstack").put("node", "gpu-1").put("pid", 4242).put("run_name", "kr-run")
        .put("event_key", "k1"), JsonObject.class).getInteger("updated"), "set_run updates the row");
    assertEquals(1, ask(Addresses.STORE_SUBMISSION_SET_LOG_OFFSET, new JsonObject().put("submission_id", id)
        .put("log_offset", 120).put("log_position", "p120"), JsonObject.class).getInteger("updated"),
        "set_log_offset moves the log offset forward");
    append(id, progress(EventType.PROVISIONING), progress(EventType.COMPILING));

    JsonObject fields = new JsonObject().put("reason", "worker_lost").put("restart_count", 1);
    EventFrame requeued = ask(Addresses.STORE_SUBMISSION_REQUEUE, new EventWrite(id,
        progress(EventType.IN_QUEUE, fields)), EventFrame.class);
    assertEquals(4, requeued.seq(), "the re-queue's event follows the last stored one");
    assertEquals(EventType.IN_QUEUE, requeued.type(), "a re-queue stores an IN_QUEUE event");
    assertEquals(fields, requeued.fields(), "the frame carries the event's fields");
    JsonObject row = get(id);
    assertEquals(1, row.getInteger("restart_count"), "the re-queue counted one restart");
    assertEquals("IN_QUEUE", row.getString("status"), "the submission is queued again");
    assertEquals(4, row.getInteger("last_seq"), "last_seq is the re-queue's event");
    assertNull(row.getString("finished_at"), "a re-queued submission is unfinished");
    assertNull(row.getInteger("pid"), "the old run's pid is forgotten");
    assertNull(row.getString("node"), "the old run's node is forgotten");
    assertNull(row.getString("run_name"), "the old run's name is forgotten");
    assertNull(row.getString("event_key"), "the old run's event key is forgotten");
    assertEquals(0, row.getInteger("log_offset"), "the next run's log is read from its start");
    assertEquals("dstack", row.getString("backend"), "the backend stays");
    JsonObject stored = eventsAfter(id, 3).get(0);
    assertEquals("IN_QUEUE", stored.getString("status"), "the re-queue's event is stored");
    assertEquals("worker_lost", stored.getString("reason"), "with its fields");
    assertEquals(List.of(id), ids(Addresses.STORE_SUBMISSION_UNFINISHED), "it is still unfinished");

    // One transaction: the database refuses the re-queue's event (a trigger stands in for any failure of that
    // insert), after the restart was counted; the count must be rolled back with it.
    sql("CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'refused'; END $$",
        "CREATE TRIGGER refuse BEFORE INSERT ON submission_events FOR EACH ROW"
            + " WHEN (NEW.payload->>'reason' = 'refuse me') EXECUTE FUNCTION refuse()");
    NewEvent refused = progress(EventType.IN_QUEUE, new JsonObject().put("reason", "refuse me"));
    assertEquals(Failures.INTERNAL, failure(Addresses.STORE_SUBMISSION_REQUEUE, new EventWrite(id, refused)),
        "a re-queue whose event the database refuses fails (a database error)");
    JsonObject rolledBack = get(id);
    assertEquals(1, rolledBack.getInteger("restart_count"), "a failed re-queue counts no restart");
    assertEquals(4, rolledBack.getInteger("last_seq"), "a failed re-queue takes no seq");
    assertEquals(4, eventsAfter(id, 0).size(), "a failed re-queue stores no event");

    append(id, terminal(EventType.ERROR, new JsonObject().put("message", "gave up")));
    JsonObject ended = get(id);
    assertEquals(5, ended.getInteger("last_seq"), "the end is stored after the re-queue");
    assertEquals(Failures.CONFLICT, failure(Addresses.STORE_SUBMISSION_REQUEUE, new EventWrite(id,
        progress(EventType.IN_QUEUE, fields))), "a re-queue after the end is 409");
    JsonObject after = get(id);
    assertEquals(1, after.getInteger("restart_count"), "a refused re-queue counts no restart");
    assertEquals(5, after.getInteger("last_seq"), "a refused re-queue takes no seq");
    assertEquals("ERROR", after.getString("status"), "a refused re-queue leaves the end's status");
    assertEquals(ended.getString("finished_at"), after.getString("finished_at"), "and its finished_at");
    assertEquals(5, eventsAfter(id, 0).size(), "a refused re-queue stores no event");
  }

  @Test
  void aTimingVerdictIsStoredOnceAndOnlyWhileOneIsPending() throws Exception {
    String id = UUID.randomUUID().toString();
    create(id, "erin", "benchmark", 0, 5);
    JsonObject verdict = new JsonObject().put("timing", new JsonObject().put("status", "unverified")
        .put("by", "ncu").put("problems", new JsonArray().add("test 1: claimed 0.5 ms, profiler 1.0 ms")));
    append(id, progress(EventType.PROVISIONING), progress(EventType.COMPILING), progress(EventType.CHECKING),
        progress(EventType.CHECKED), progress(EventType.BENCHMARKING));
    assertEquals(Failures.CONFLICT, failure(Addresses.STORE_EVENTS_VERIFIED, verifiedWrite(id, verdict)),
        "no verdict is pending while the submission runs");

    JsonObject result = new JsonObject().put("ranked", false).put("unverified", false)
        .put("verification", new JsonObject().put("timing", new JsonObject().put("status", "pending")));
    assertTrue(EventType.timingPending(result), "the BENCHMARKED's fields say its timing is pending");
    List<EventFrame> benchmarked = append(id, progress(EventType.BENCHMARK_RESULT),
        terminal(EventType.BENCHMARKED, result));
    assertEquals(8, benchmarked.get(1).seq(), "BENCHMARKED is the eighth event");
    assertEquals(List.of(), ids(Addresses.STORE_SUBMISSION_UNFINISHED), "BENCHMARKED finishes the submission");
    assertEquals(List.of(id), ids(Addresses.STORE_SUBMISSION_VERDICT_PENDING),
        "a BENCHMARKED with pending timing awaits its verdict");
    String finishedAt = get(id).getString("finished_at");

    EventFrame verified = ask(Addresses.STORE_EVENTS_VERIFIED, verifiedWrite(id, verdict), EventFrame.class);
    assertEquals(9, verified.seq(), "VERIFIED follows BENCHMARKED");
    assertEquals(EventType.VERIFIED, verified.type(), "the verdict is a VERIFIED event");
    assertEquals(verdict, verified.fields(), "the frame carries the verdict");
    JsonObject row = get(id);
    assertEquals("BENCHMARKED", row.getString("status"), "the verdict leaves the status BENCHMARKED");
    assertEquals(9, row.getInteger("last_seq"), "the verdict took the next seq");
    assertEquals(finishedAt, row.getString("finished_at"), "the verdict leaves finished_at");
    JsonObject storedResult = row.getJsonObject("result");
    assertEquals(verdict.getJsonObject("timing"), storedResult.getJsonObject("verification").getJsonObject("timing"),
        "the verdict replaces the stored result's pending timing");
    assertTrue(storedResult.getBoolean("unverified"), "an unverified verdict marks the result unverified");
    assertFalse(storedResult.getBoolean("ranked"), "the rest of the result stays");
    assertEquals(List.of(), ids(Addresses.STORE_SUBMISSION_VERDICT_PENDING), "no verdict is pending any more");
    List<JsonObject> events = eventsAfter(id, 7);
    assertEquals(List.of("BENCHMARKED", "VERIFIED"), events.stream().map(e -> e.getString("status")).toList(),
        "VERIFIED is stored after BENCHMARKED");
    assertEquals("unverified", events.get(1).getJsonObject("timing").getString("status"), "with the verdict");

    JsonObject second = new JsonObject().put("timing", new JsonObject().put("status", "not_checked"));
    assertEquals(Failures.CONFLICT, failure(Addresses.STORE_EVENTS_VERIFIED, verifiedWrite(id, second)),
        "a second verdict is 409");
    JsonObject after = get(id);
    assertEquals(9, after.getInteger("last_seq"), "a refused verdict takes no seq");
    assertEquals("unverified", after.getJsonObject("result").getJsonObject("verification").getJsonObject("timing")
        .getString("status"), "a refused verdict leaves the first one");
    assertEquals(9, eventsAfter(id, 0).size(), "a refused verdict stores no event");

    String settled = UUID.randomUUID().toString();
    create(settled, "frank", "benchmark", 0, 5);
    append(settled, terminal(EventType.BENCHMARKED, new JsonObject().put("unverified", false)
        .put("verification", new JsonObject().put("timing", new JsonObject().put("status", "verified")))));
    assertEquals(List.of(), ids(Addresses.STORE_SUBMISSION_VERDICT_PENDING), "a verified timing awaits nothing");
    assertEquals(Failures.CONFLICT, failure(Addresses.STORE_EVENTS_VERIFIED, verifiedWrite(settled, verdict)),
        "a verdict for a BENCHMARKED whose timing is not pending is 409");
    assertEquals(2, get(settled).getInteger("last_seq"), "and stores nothing");
  }

  @Test
  void aBoardShowsOnlyResultsThatPassEveryCheckAndAFlagThatIsNoBooleanNeitherRanksNorBreaksIt() throws Exception {
    JsonObject ranked = new JsonObject().put("geomean_runtime_ms", 0.5).put("geomean_speedup", 2.0)
        .put("verification", new JsonObject().put("judge", "passed")
            .put("timing", new JsonObject().put("method", "replayed").put("status", "verified")))
        .put("isolation", new JsonObject().put("full", true));
    Map<String, JsonObject> results = Map.of(
        "ann", ranked,
        "bob", ranked.copy().put("needs_review", "maybe"), // the read's cast to boolean had failed every read
        "cat", ranked.copy().put("unverified", 1),
        "dan", ranked.copy().put("geomean_runtime_ms", "0.4"),
        "eve", ranked.copy().put("geomean_runtime_ms", -1.0),
        "fay", ranked.copy().put("verification", ranked.getJsonObject("verification").copy()
            .put("timing", new JsonObject().put("method", "replayed").put("status", "pending"))));
    for (Map.Entry<String, JsonObject> entry : results.entrySet()) {
      String id = UUID.randomUUID().toString();
      create(id, entry.getKey(), "benchmark", 0, 5);
      append(id, terminal(EventType.BENCHMARKED, entry.getValue()));
    }
    JsonArray rows = ask(Addresses.STORE_LEADERBOARD, new JsonObject().put("problem", "leaky-relu")
        .put("gpu_type", "test").put("dtype", "float32").put("limit", 20), JsonObject.class).getJsonArray("rows");
    assertEquals(1, rows.size(), rows.encode());
    assertEquals("ann", rows.getJsonObject(0).getString("user_id"));
    assertEquals(2.0, rows.getJsonObject(0).getDouble("speedup"));
  }

  @Test
  void aMalformedSubmissionIdIsNotFoundNotAServerError() throws Exception {
    String bad = "not-a-uuid";
    JsonObject byId = new JsonObject().put("id", bad);
    JsonObject bySubmission = new JsonObject().put("submission_id", bad);
    assertEquals(Failures.NOT_FOUND, failure(Addresses.STORE_SUBMISSION_GET, byId), "get with a malformed id is 404");
    assertEquals(Failures.NOT_FOUND, failure(Addresses.STORE_EVENTS_AFTER, bySubmission),
        "events.after with a malformed id is 404");
    assertEquals(Failures.NOT_FOUND, failure(Addresses.STORE_SUBMISSION_SET_RUN, bySubmission.copy()
        .put("backend", "local")), "set_run with a malformed id is 404");
    assertEquals(Failures.NOT_FOUND, failure(Addresses.STORE_EVENTS_APPEND,
        new EventAppend(bad, List.of(progress(EventType.PROVISIONING)))), "events.append with a malformed id is 404");
    assertEquals(Failures.NOT_FOUND, failure(Addresses.STORE_SUBMISSION_REQUEUE, new EventWrite(bad,
        progress(EventType.IN_QUEUE))), "submission.requeue with a malformed id is 404");
    assertEquals(Failures.NOT_FOUND, failure(Addresses.STORE_EVENTS_VERIFIED,
        verifiedWrite(bad, new JsonObject().put("timing", new JsonObject().put("status", "verified")))),
        "events.verified with a malformed id is 404");
    ReplyException reply = replyFailure(Addresses.STORE_SUBMISSION_GET, byId);
    assertEquals("no submission " + bad, reply.getMessage(), "the failure names the id");
    assertEquals(Failures.NOT_FOUND, failure(Addresses.STORE_SUBMISSION_GET, new JsonObject()),
        "a get without an id is 404");
  }

  /**
   * The HTTP edge passes a list cursor's key on unchecked ({@code PageCursor.decode} takes any text), so a
   * client's crafted {@code ?before=} reaches {@code store.submission.list} with a {@code before_id} that is
   * no UUID.
   */
  @Test
  // It was a 500 ("database error: Invalid UUID string"), reachable from GET /api/submissions?before=.
  void aMalformedListCursorIsAClientError() throws Exception {
    create(UUID.randomUUID().toString(), "gina", "check", 0, 5);
    JsonObject query = new JsonObject().put("limit", 10).put("before_created_at", "2030-01-01T00:00:00Z")
        .put("before_id", "not-a-uuid");
    int code = failure(Addresses.STORE_SUBMISSION_LIST, query);
    assertTrue(code >= 400 && code < 500, "a malformed cursor id is a 4xx, got " + code);
  }

  // ---- helpers

  private static JsonObject createBody(String id, String user, String mode, int position, int maxActive) {
    return new JsonObject().put("id", id).put("user_id", user).put("problem", "leaky-relu").put("language", "cuda")
        .put("gpu_type", "test").put("dtype", "float32").put("code", "__global__ void k() {}").put("mode", mode)
        .put("cancel_on_disconnect", true).put("position", position).put("max_active", maxActive)
        .put("per_hour", 0).put("gpu_seconds_per_day", 0);
  }

  private EventFrame create(String id, String user, String mode, int position, int maxActive) throws Exception {
    return ask(Addresses.STORE_SUBMISSION_CREATE, createBody(id, user, mode, position, maxActive), EventFrame.class);
  }

  private JsonObject get(String id) throws Exception {
    return ask(Addresses.STORE_SUBMISSION_GET, new JsonObject().put("id", id), JsonObject.class);
  }

  private List<String> ids(String address) throws Exception {
    return ask(address, new Unfinished.Asked(), Unfinished.class).submissions().stream()
        .map(Unfinished.Found::id).toList();
  }

  private List<JsonObject> eventsAfter(String id, int afterSeq) throws Exception {
    return ask(Addresses.STORE_EVENTS_AFTER, new JsonObject().put("submission_id", id).put("after_seq", afterSeq),
        JsonObject.class).getJsonArray("events").stream().map(e -> (JsonObject) e).toList();
  }

  private List<EventFrame> append(String id, NewEvent... events) throws Exception {
    return ask(Addresses.STORE_EVENTS_APPEND, new EventAppend(id, List.of(events)), EventAppend.Stored.class)
        .frames();
  }

  /** An event as the tracker makes it: the payload its fields encoded. */
  private static NewEvent event(EventType type, JsonObject fields, boolean terminal, JsonObject result,
                                JsonObject error) {
    return new NewEvent(type, fields, fields.encode(), terminal, result, error, null, null);
  }

  private static NewEvent progress(EventType type) {
    return progress(type, new JsonObject());
  }

  private static NewEvent progress(EventType type, JsonObject fields) {
    return event(type, fields, false, null, null);
  }

  /** An end as the tracker stores it: a result's fields go on the row as its result, an error's as its error. */
  private static NewEvent terminal(EventType type, JsonObject fields) {
    JsonObject error = type.isError() ? new JsonObject().put("type", type.name())
        .put("message", fields.getValue("message")) : null;
    return event(type, fields, true, type.isError() ? null : fields, error);
  }

  private static EventWrite verifiedWrite(String id, JsonObject fields) {
    return new EventWrite(id, progress(EventType.VERIFIED, fields));
  }

  /** Runs {@code statements} on the test's database directly (JDBC), outside the store. */
  private void sql(String... statements) throws Exception {
    PgConnectOptions options = PgConnectOptions.fromUri(databaseUrl);
    String jdbc = "jdbc:postgresql://" + options.getHost() + ":" + options.getPort() + "/" + options.getDatabase();
    try (Connection connection = DriverManager.getConnection(jdbc, options.getUser(), options.getPassword());
         Statement statement = connection.createStatement()) {
      for (String sql : statements) {
        statement.execute(sql);
      }
    }
  }

  private <T> T ask(String address, Object body, Class<T> type) throws Exception {
    Object reply = vertx.eventBus().request(address, body).toCompletionStage().toCompletableFuture()
        .get(15, TimeUnit.SECONDS).body();
    return assertInstanceOf(type, reply, address + " answers a " + type.getSimpleName());
  }

  private ReplyException replyFailure(String address, Object body) {
    ExecutionException error = assertThrows(ExecutionException.class, () -> vertx.eventBus().request(address, body)
        .toCompletionStage().toCompletableFuture().get(15, TimeUnit.SECONDS), address + " must fail");
    return assertInstanceOf(ReplyException.class, error.getCause(), address + " fails with a reply");
  }

  /** The failure code of a request that must fail. */
  private int failure(String address, Object body) {
    return replyFailure(address, body).failureCode();
  }
}
