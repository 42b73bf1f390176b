package dev.kernelrunner.fleet;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.kernelrunner.bus.Addresses;
import dev.kernelrunner.config.AppConfig;
import dev.kernelrunner.config.ConfigLoader;
import dev.kernelrunner.dstack.DstackApi;
import dev.kernelrunner.support.FakeDstack;
import dev.kernelrunner.support.Ports;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.eventbus.DeliveryOptions;
import io.vertx.core.eventbus.ReplyException;
import io.vertx.core.eventbus.ReplyFailure;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The fleet manager deployed alone in a fresh Vert.x, its dstack the fake server (FakeDstack), driven through its
 * three bus addresses. {@code fleet.ensure}: a missing fleet is looked up, then created ({@code fleets/get_plan},
 * {@code fleets/apply}) from the template and the AMD_* settings, once for concurrent callers; a ready one is
 * answered from memory unless forced; fleets are found by GPU type or by name; local and worker types are answered
 * without dstack; unknown ones are 404; dstack's refusals (token, version, spec), an unreachable server and no
 * server at all are 503s that say why, never timeouts; a dry run writes the spec and applies nothing.
 * {@code fleet.list}: every configured type, stale fleets refreshed first. {@code fleet.health}: the server's
 * version (or why it is unusable, asked again within seconds once put right) and each fleet's state; with no
 * dstack type, nothing asks dstack. The node gauges follow what dstack lists.
 */
class FleetManagerVerticleTest {
  private static final String FLEET = "amd-mi300x-fleet";
  private static final long WAIT_SECONDS = 15;

  @TempDir
  Path dataDir;

  private Vertx vertx;
  private SimpleMeterRegistry meters;
  private DstackApi api;
  private final List<FakeDstack> fakes = new ArrayList<>();

  @BeforeEach
  void vertx() {
    vertx = Vertx.vertx();
    meters = new SimpleMeterRegistry();
  }

  @AfterEach
  void close() throws Exception {
    if (api != null) {
      api.close();
    }
    vertx.close().toCompletionStage().toCompletableFuture().get(30, TimeUnit.SECONDS);
    fakes.forEach(FakeDstack::close);
  }

  // ---- set-up

  private FakeDstack fake(JsonObject knobs) throws Exception {
    FakeDstack fake = FakeDstack.start(knobs);
    fakes.add(fake);
    return fake;
  }

  /** Settings pointing at {@code fake} (none when null: no dstack server configured), with {@code extra}. */
  private AppConfig config(FakeDstack fake, Map<String, String> extra) throws Exception {
    Map<String, String> env = new HashMap<>(fake == null ? Map.of() : fake.serviceEnv());
    env.put("DATA_DIR", dataDir.toString());
    env.put("HOME", dataDir.toString()); // no ~/.dstack/config.yml of whoever runs the tests
    env.putAll(extra);
    return ConfigLoader.load(env);
  }

  private void deploy(AppConfig config) throws Exception {
    api = DstackApi.ifConfigured(vertx, config.dstack(), meters);
    vertx.deployVerticle(new FleetManagerVerticle(config, meters, api))
        .toCompletionStage().toCompletableFuture().get(30, TimeUnit.SECONDS);
  }

  private void deploy(FakeDstack fake) throws Exception {
    deploy(config(fake, Map.of()));
  }

  // ---- the bus

  private Future<JsonObject> send(String address, JsonObject body) {
    return vertx.eventBus().<JsonObject>request(address, body, new DeliveryOptions().setSendTimeout(20_000))
        .map(message -> message.body());
  }

  private static JsonObject await(Future<JsonObject> reply) throws Exception {
    return reply.toCompletionStage().toCompletableFuture().get(WAIT_SECONDS + 10, TimeUnit.SECONDS);
  }

  private JsonObject ask(String address, JsonObject body) throws Exception {
    return await(send(address, body));
  }

  private JsonObject ensure(JsonObject body) throws Exception {
    return ask(Addresses.FLEET_ENSURE, body);
  }

  private JsonObject health() throws Exception {
    return ask(Addresses.FLEET_HEALTH, new JsonObject());
  }

  private JsonObject listed(boolean refresh) throws Exception {
    return ask(Addresses.FLEET_LIST, new JsonObject().put("refresh", refresh));
  }

  /** The fleet of {@code fleet.list}'s answer named {@code name}. */
  private static JsonObject entry(JsonObject listing, String name) {
    return listing.getJsonArray("fleets").stream().map(JsonObject.class::cast)
        .filter(fleet -> name.equals(fleet.getString("name"))).findFirst()
        .orElseThrow(() -> new AssertionError("no fleet " + name + " in " + listing.encode()));
  }

  /** The failure {@code address} answered {@code body} with: a failure the verticle sent, not a bus timeout. */
  private ReplyException refusal(String address, JsonObject body) {
    ExecutionException thrown = assertThrows(ExecutionException.class, () -> ask(address, body),
        address + " " + body.encode() + " should fail");
    ReplyException reply = assertInstanceOf(ReplyException.class, thrown.getCause(), "a bus failure");
    assertEquals(ReplyFailure.RECIPIENT_FAILURE, reply.failureType(),
        "the fleet manager answers with a failure, it does not leave the caller to time out: " + reply);
    return reply;
  }

  private static ReplyException assertUnavailable(ReplyException reply, String... said) {
    assertEquals(503, reply.failureCode(), "dstack failures are 503: " + reply.getMessage());
    for (String words : said) {
      assertTrue(String.valueOf(reply.getMessage()).contains(words),
          "the failure should say '" + words + "': " + reply.getMessage());
    }
    return reply;
  }

  // ---- the fake server

  /** How many requests the fake received whose path ends with {@code call} (such as {@code fleets/get}). */
  private static JsonObject dstackFleet(FakeDstack fake) throws Exception {
    return fake.state().getJsonObject("fleets").getJsonObject(FLEET);
  }

  private static void awaitTrue(String what, Callable<Boolean> done) throws Exception {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(WAIT_SECONDS);
    while (!done.call()) {
      if (System.nanoTime() > deadline) {
        throw new AssertionError("not within " + WAIT_SECONDS + " s: " + what);
      }
      Thread.sleep(50);
    }
  }

  private Path specFile() {
    return dataDir.toAbsolutePath().resolve("dstack").resolve(FLEET + ".fleet-spec.json");
  }

  private double gauge(String name, String... tags) {
    return meters.get(name).tags(tags).gauge().value();
  }

  // ---- fleet.ensure

  /**
   * Issue 29: raising AMD_FLEET_MAX_NODES (or changing AMD_SPOT_POLICY) updates the fleet dstack has, in place (the
   * same fleet, through fleets/apply with it as current_resource), as dstack apply does; surplus runs would
   * otherwise fail "Fleet is at capacity" for good. Fields dstack cannot change in place are left as they are.
   */
  @Test
  void aFleetMadeWithOtherLimitsIsUpdatedInPlaceToTheSettings() throws Exception {
    FakeDstack fake = fake(new JsonObject());
    deploy(config(fake, Map.of("AMD_FLEET_MAX_NODES", "2")));
    ask(Addresses.FLEET_ENSURE, new JsonObject().put("gpu_type", "MI300X"));
    String id = dstackFleet(fake).getString("id");
    vertx.close().toCompletionStage().toCompletableFuture().get(30, TimeUnit.SECONDS);
    vertx = io.vertx.core.Vertx.vertx();
    deploy(config(fake, Map.of("AMD_FLEET_MAX_NODES", "5", "AMD_FLEET_IDLE_DURATION", "1h")));
    JsonObject fleet = ask(Addresses.FLEET_ENSURE, new JsonObject().put("gpu_type", "MI300X"));
    assertEquals(true, fleet.getBoolean("ready"), fleet.encode());
    JsonObject onDstack = dstackFleet(fake);
    assertEquals(id, onDstack.getString("id"), "the same fleet, updated in place");
    JsonObject conf = onDstack.getJsonObject("spec").getJsonObject("configuration");
    assertEquals(5, conf.getJsonObject("nodes").getInteger("max"), conf.encode());
    assertEquals(2, fake.calls("fleets/apply"), "created once, updated once");
    assertNotEquals("1h", String.valueOf(conf.getValue("idle_duration")),
        "idle_duration cannot change in place (server/services/fleets.py:1251-1276): left as it was");
    // In step now: nothing more is applied.
    ask(Addresses.FLEET_ENSURE, new JsonObject().put("gpu_type", "MI300X").put("force", true));
    assertEquals(2, fake.calls("fleets/apply"));
  }

  @Test
  void ensureCreatesAMissingFleetOnceForConcurrentCallersFromTheTemplateAndTheAmdSettings() throws Exception {
    FakeDstack fake = fake(new JsonObject());
    deploy(fake);
    List<Future<JsonObject>> answers = new ArrayList<>();
    for (int i = 0; i < 3; i++) {
      answers.add(send(Addresses.FLEET_ENSURE, new JsonObject().put("gpu_type", "MI300X")));
    }
    for (Future<JsonObject> answer : answers) {
      JsonObject fleet = await(answer);
      assertEquals(FLEET, fleet.getString("name"), fleet.encode());
      assertEquals("MI300X", fleet.getString("gpu_type"));
      assertEquals("dstack", fleet.getString("backend"));
      assertEquals("amddevcloud", fleet.getString("dstack_backend"));
      assertEquals("MI300X:192GB:1", fleet.getString("gpu"));
      assertEquals(2, fleet.getInteger("max_nodes"), "AMD_FLEET_MAX_NODES");
      assertEquals("active", fleet.getString("status"), "dstack's status of the fleet it made");
      assertEquals(true, fleet.getBoolean("ready"), fleet.encode());
      assertEquals(false, fleet.getBoolean("dry_run"));
      assertEquals(new JsonArray(), fleet.getJsonArray("nodes"), "a new fleet has no instances");
      assertNull(fleet.getString("error"));
      assertEquals(specFile().toString(), fleet.getString("config_path"));
      assertNotNull(fleet.getString("last_checked"));
    }
    assertEquals(1, fake.calls("fleets/get_plan"), "three concurrent callers share one creation");
    assertEquals(1, fake.calls("fleets/apply"), "three concurrent callers share one creation");
    assertEquals(2, fake.calls("fleets/get"), "looked up once before the creation and once after");
    assertEquals(1, fake.calls("server/get_info"), "the server's version is asked once");

    JsonObject created = dstackFleet(fake);
    assertNotNull(created, "the fleet exists on dstack");
    JsonObject conf = created.getJsonObject("spec").getJsonObject("configuration");
    assertEquals("fleet", conf.getString("type"));
    assertEquals(FLEET, conf.getString("name"));
    assertEquals("any", conf.getString("placement"), "kept from conf/dstack/fleet.json");
    assertEquals(new JsonObject().put("min", 0).put("target", 0).put("max", 2), conf.getJsonObject("nodes"));
    assertEquals(new JsonArray().add("amddevcloud"), conf.getJsonArray("backends"));
    assertEquals("MI300X:192GB:1", conf.getJsonObject("resources").getString("gpu"));
    assertEquals("10m", conf.getString("idle_duration"));
    assertEquals("auto", conf.getString("spot_policy"));
    assertFalse(conf.containsKey("env"), "a backend fleet has no env");
    assertEquals("default", created.getJsonObject("spec").getJsonObject("profile").getString("name"));
    assertEquals(created.getJsonObject("spec"), new JsonObject(Files.readString(specFile())),
        "what was applied is what was written to DATA_DIR/dstack");
  }

  @Test
  void aReadyFleetIsAnsweredFromMemoryUnlessForcedAndOneDeletedBehindItsBackIsMadeAgain() throws Exception {
    FakeDstack fake = fake(new JsonObject());
    deploy(fake);
    assertEquals(true, ensure(new JsonObject().put("gpu_type", "MI300X")).getBoolean("ready"));
    assertEquals(2, fake.calls("fleets/get"));

    JsonObject known = ensure(new JsonObject().put("gpu_type", "MI300X"));
    assertEquals(true, known.getBoolean("ready"));
    assertEquals(2, fake.calls("fleets/get"), "a ready fleet is answered without asking dstack");

    JsonObject forced = ensure(new JsonObject().put("gpu_type", "MI300X").put("force", true));
    assertEquals(true, forced.getBoolean("ready"));
    assertEquals(3, fake.calls("fleets/get"), "force looks the fleet up again");
    assertEquals(1, fake.calls("fleets/apply"), "an existing fleet is not applied again");

    fake.fake("delete-fleets");
    assertNull(dstackFleet(fake));
    JsonObject again = ensure(new JsonObject().put("fleet_name", FLEET).put("force", true));
    assertEquals(true, again.getBoolean("ready"), again.encode());
    assertNotNull(dstackFleet(fake), "made again");
    assertEquals(2, fake.calls("fleets/apply"), "the deleted fleet was applied again");
  }

  @Test
  void ensureFindsFleetsByNameAnswersOtherTypesItselfAndRefusesUnknownOnes() throws Exception {
    FakeDstack fake = fake(new JsonObject());
    deploy(fake);
    ReplyException unknownName = refusal(Addresses.FLEET_ENSURE, new JsonObject().put("fleet_name", "nope"));
    assertEquals(404, unknownName.failureCode());
    assertEquals("no fleet named nope is configured", unknownName.getMessage());
    ReplyException unknownType = refusal(Addresses.FLEET_ENSURE, new JsonObject().put("gpu_type", "H100"));
    assertEquals(404, unknownType.failureCode());
    assertEquals("GPU type H100 is not configured", unknownType.getMessage());

    // LOCAL_GPU_TYPES=local (served by local workers): no fleet of ours, no dstack.
    JsonObject local = ensure(new JsonObject().put("gpu_type", "local").put("force", true));
    assertEquals(new JsonObject().put("name", "local").put("gpu_type", "local").put("backend", "worker")
        .put("max_nodes", 0).put("status", "active").put("ready", true), local);
    assertEquals(0, fake.calls("fleets/get"), "neither the unknown nor the local types asked dstack");

    JsonObject byName = ensure(new JsonObject().put("fleet_name", FLEET));
    assertEquals("MI300X", byName.getString("gpu_type"));
    assertEquals(true, byName.getBoolean("ready"), byName.encode());
    assertNotNull(dstackFleet(fake), "ensure by name created it");
  }

  @Test
  void aForcedEnsureReportsTheNodesDstackListsAndTheGaugesFollow() throws Exception {
    FakeDstack fake = fake(new JsonObject());
    deploy(fake);
    String[] fleetTags = {"fleet", FLEET, "gpu_type", "MI300X"};
    assertEquals(0.0, gauge("kernel_runner_fleet_ready", fleetTags), "not ready before any check");
    assertEquals(true, ensure(new JsonObject().put("gpu_type", "MI300X")).getBoolean("ready"));
    assertEquals(1.0, gauge("kernel_runner_fleet_ready", fleetTags), "ready once checked");

    // A run on the fleet: dstack provisions an instance for it (busy while the run lives).
    JsonObject spec = new JsonObject().put("run_name", "probe-run").put("configuration", new JsonObject()
        .put("type", "task").put("commands", new JsonArray().add("sleep 30"))
        .put("fleets", new JsonArray().add(FLEET)));
    assertEquals(200, fake.api("/api/project/main/runs/apply", new JsonObject().put("plan",
        new JsonObject().put("run_spec", spec).putNull("current_resource")).put("force", false)).statusCode());
    awaitTrue("dstack lists a busy instance", () -> dstackFleet(fake).getJsonArray("instances").stream()
        .map(JsonObject.class::cast).anyMatch(instance -> "busy".equals(instance.getString("status"))));

    JsonObject fleet = ensure(new JsonObject().put("gpu_type", "MI300X").put("force", true));
    assertEquals(new JsonArray().add(new JsonObject().put("name", FLEET + "-0").put("status", "busy")
            .put("instance_type", "gpu-mi300x1-192gb").put("backend", "amddevcloud").put("region", "atl1")
            .put("price", 1.99)), fleet.getJsonArray("nodes"), "each instance as dstack lists it");
    assertEquals(1.0, gauge("kernel_runner_fleet_nodes", "fleet", FLEET, "status", "busy"), "one busy node");
    assertEquals(0.0, gauge("kernel_runner_fleet_nodes", "fleet", FLEET, "status", "idle"), "no idle node");
    fake.api("/api/project/main/runs/stop", new JsonObject().put("runs_names", new JsonArray().add("probe-run"))
        .put("abort", true));
  }

  // ---- fleet.list and fleet.health

  @Test
  void listShowsEveryTypeRefreshesOnlyStaleFleetsAndHealthShowsTheServerAndEachFleet() throws Exception {
    FakeDstack fake = fake(new JsonObject());
    deploy(fake);
    JsonObject before = listed(false);
    assertEquals(2, before.getJsonArray("fleets").size(), "the local type and the dstack fleet: " + before);
    assertEquals("worker", entry(before, "local").getString("backend"));
    JsonObject unchecked = entry(before, FLEET);
    assertNull(unchecked.getString("status"), "never checked: " + unchecked);
    assertEquals(false, unchecked.getBoolean("ready"));
    assertNull(unchecked.getString("last_checked"));
    assertEquals(0, fake.calls("fleets/get"), "a listing without refresh asks dstack nothing");

    JsonObject firstHealth = health();
    JsonObject server = firstHealth.getJsonObject("dstack");
    assertEquals("UP", server.getString("status"), firstHealth.encode());
    assertEquals("0.20.29", server.getString("version"));
    assertEquals(fake.url(), server.getString("server"));
    assertEquals("main", server.getString("project"));
    assertEquals("UNKNOWN", firstHealth.getJsonObject("fleets").getJsonObject(FLEET).getString("status"),
        "a fleet never checked is UNKNOWN");

    JsonObject refreshed = entry(listed(true), FLEET);
    assertEquals(true, refreshed.getBoolean("ready"), refreshed.encode());
    assertEquals("active", refreshed.getString("status"));
    assertNotNull(refreshed.getString("last_checked"));
    assertEquals(2, fake.calls("fleets/get"), "the refresh looked the fleet up (missing), made it, looked again");
    JsonObject fresh = entry(listed(true), FLEET);
    assertEquals(refreshed.getString("last_checked"), fresh.getString("last_checked"));
    assertEquals(2, fake.calls("fleets/get"), "a fleet checked less than 15 s ago is not asked again");

    JsonObject fleetHealth = health().getJsonObject("fleets").getJsonObject(FLEET);
    assertEquals("UP", fleetHealth.getString("status"), fleetHealth.encode());
    assertEquals("active", fleetHealth.getString("fleet_status"));
    assertNull(fleetHealth.getString("error"));
    assertEquals(refreshed.getString("last_checked"), fleetHealth.getString("last_checked"));
  }

  @Test
  void withNoDstackGpuTypeNothingAsksDstack() throws Exception {
    FakeDstack fake = fake(new JsonObject());
    deploy(config(fake, Map.of("LOCAL_GPU_TYPES", "local,MI300X")));
    assertEquals(new JsonObject().put("dstack", new JsonObject().put("status", "NOT_USED")), health());
    JsonObject mi300x = ensure(new JsonObject().put("gpu_type", "MI300X").put("force", true));
    assertEquals("worker", mi300x.getString("backend"), "served by local workers: " + mi300x);
    assertEquals(true, mi300x.getBoolean("ready"));
    assertEquals(List.of("local", "MI300X"), listed(true).getJsonArray("fleets").stream()
        .map(fleet -> ((JsonObject) fleet).getString("name")).toList());
    assertEquals(new JsonArray(), fake.state().getJsonArray("requests"), "dstack was never asked anything");
  }

  // ---- failures

  @Test
  void aRefusedTokenIsA503NamingItAndTheServerIsAskedAgainWithinSecondsOncePutRight() throws Exception {
    FakeDstack fake = fake(new JsonObject().put("token", "another"));
    deploy(fake);
    assertUnavailable(refusal(Addresses.FLEET_ENSURE, new JsonObject().put("gpu_type", "MI300X")),
        "the dstack server is not usable", "Invalid token", "DSTACK_TOKEN");

    JsonObject down = health();
    assertEquals("DOWN", down.getJsonObject("dstack").getString("status"), down.encode());
    assertTrue(down.getJsonObject("dstack").getString("error").contains("Invalid token"), down.encode());
    JsonObject fleetDown = down.getJsonObject("fleets").getJsonObject(FLEET);
    assertEquals("DOWN", fleetDown.getString("status"), "a failed check is DOWN: " + fleetDown);
    assertTrue(fleetDown.getString("error").contains("Invalid token"), fleetDown.encode());
    JsonObject listed = entry(listed(true), FLEET);
    assertEquals(false, listed.getBoolean("ready"));
    assertTrue(listed.getString("error").contains("Invalid token"), "the listing says why: " + listed);
    assertEquals(0, fake.calls("fleets/get"), "nothing but the version is asked of a server that refuses us");

    fake.configure(new JsonObject()); // the token put right
    long fixed = System.nanoTime();
    awaitTrue("health sees the server UP again", () -> "UP".equals(health().getJsonObject("dstack")
        .getString("status")));
    assertTrue(System.nanoTime() - fixed < TimeUnit.SECONDS.toNanos(5),
        "a DOWN server is asked again after 2 s, not 30");
    JsonObject fleet = ensure(new JsonObject().put("gpu_type", "MI300X"));
    assertEquals(true, fleet.getBoolean("ready"), fleet.encode());
    assertNull(fleet.getString("error"), "the old error is gone");
  }

  @Test
  void aServerTooOldIsA503SayingWhichVersionIsNeeded() throws Exception {
    FakeDstack fake = fake(new JsonObject().put("server_version", "0.19.10"));
    deploy(fake);
    assertUnavailable(refusal(Addresses.FLEET_ENSURE, new JsonObject().put("gpu_type", "MI300X")),
        "version 0.19.10", "needs 0.19.33 or newer");
    JsonObject server = health().getJsonObject("dstack");
    assertEquals("DOWN", server.getString("status"));
    assertTrue(server.getString("error").contains("needs 0.19.33"), server.encode());
    assertEquals(0, fake.calls("fleets/get"));
  }

  @Test
  void aFleetSpecDstackRefusesIsA503QuotingDstackEveryTimeItIsAsked() throws Exception {
    FakeDstack fake = fake(new JsonObject());
    Path template = dataDir.resolve("fleet-template.json");
    Files.writeString(template, new JsonObject().put("type", "fleet").put("bogus", true).encode());
    deploy(config(fake, Map.of("DSTACK_FLEET_TEMPLATE", template.toString())));
    for (int attempt = 1; attempt <= 2; attempt++) {
      assertUnavailable(refusal(Addresses.FLEET_ENSURE, new JsonObject().put("gpu_type", "MI300X")),
          "fleets/get_plan answered 422", "Extra inputs are not permitted", "bogus");
      assertEquals(attempt, fake.calls("fleets/get_plan"), "a failed check does not stay stuck: asked again");
    }
    assertEquals(0, fake.calls("fleets/apply"), "a refused plan is not applied");
    assertNull(dstackFleet(fake));
    JsonObject fleet = entry(listed(false), FLEET);
    assertEquals(false, fleet.getBoolean("ready"));
    assertTrue(fleet.getString("error").contains("bogus"), fleet.encode());
    assertEquals("DOWN", health().getJsonObject("fleets").getJsonObject(FLEET).getString("status"));
  }

  @Test
  void anUnreachableServerIsA503SayingNothingAnswered() throws Exception {
    int closed = Ports.free();
    deploy(config(null, Map.of("DSTACK_SERVER_URL", "http://127.0.0.1:" + closed, "DSTACK_TOKEN", "t",
        "DSTACK_PROJECT", "main")));
    assertUnavailable(refusal(Addresses.FLEET_ENSURE, new JsonObject().put("gpu_type", "MI300X")),
        "no answer from http://127.0.0.1:" + closed);
    JsonObject server = health().getJsonObject("dstack");
    assertEquals("DOWN", server.getString("status"));
    assertTrue(server.getString("error").contains("no answer"), server.encode());
  }

  @Test
  void withoutADstackServerConfiguredEnsureAndHealthSayHowToConfigureOne() throws Exception {
    deploy(config(null, Map.of()));
    assertUnavailable(refusal(Addresses.FLEET_ENSURE, new JsonObject().put("gpu_type", "MI300X")),
        "dstack is not configured", "DSTACK_SERVER_URL");
    JsonObject server = health().getJsonObject("dstack");
    assertEquals("DOWN", server.getString("status"));
    assertTrue(server.getString("error").contains("dstack is not configured"), server.encode());
    JsonObject fleet = entry(listed(true), FLEET);
    assertEquals(false, fleet.getBoolean("ready"), "a refresh without a server still answers: " + fleet);
  }

  // ---- dry run

  @Test
  void aDryRunWritesTheSpecAppliesNothingAndSaysSo() throws Exception {
    FakeDstack fake = fake(new JsonObject());
    deploy(config(fake, Map.of("AMD_FLEET_DRY_RUN", "true")));
    JsonObject fleet = ensure(new JsonObject().put("gpu_type", "MI300X").put("force", true));
    assertEquals(true, fleet.getBoolean("dry_run"), fleet.encode());
    assertEquals(false, fleet.getBoolean("ready"), "a fleet only written is not ready");
    assertEquals("not_applied", fleet.getString("status"));
    assertEquals(specFile().toString(), fleet.getString("config_path"));
    assertTrue(fleet.getString("error").contains("AMD_FLEET_DRY_RUN"), fleet.encode());
    JsonObject written = new JsonObject(Files.readString(specFile()));
    assertEquals(FLEET, written.getJsonObject("configuration").getString("name"));
    assertEquals(0, fake.calls("fleets/get_plan"));
    assertEquals(0, fake.calls("fleets/apply"));
    assertNull(dstackFleet(fake), "nothing was made on dstack");
  }

  @Test
  // Found by this test, fixed: after a dry run found the fleet missing, its dry-run flag stayed set for good: a fleet applied by hand was never ready.
  void aFleetAppliedByHandAfterADryRunIsSeenReady() throws Exception {
    FakeDstack fake = fake(new JsonObject());
    deploy(config(fake, Map.of("AMD_FLEET_DRY_RUN", "true")));
    assertEquals(true, ensure(new JsonObject().put("gpu_type", "MI300X")).getBoolean("dry_run"));
    // The operator reviews the written spec and applies it (as `dstack apply` does).
    JsonObject spec = new JsonObject(Files.readString(specFile()));
    assertEquals(200, fake.api("/api/project/main/fleets/apply", new JsonObject().put("plan",
        new JsonObject().put("spec", spec).putNull("current_resource")).put("force", false)).statusCode());
    JsonObject fleet = ensure(new JsonObject().put("gpu_type", "MI300X").put("force", true));
    assertEquals("active", fleet.getString("status"), fleet.encode());
    assertEquals(true, fleet.getBoolean("ready"), "the fleet exists and is active on dstack: " + fleet);
    assertNull(fleet.getString("error"), "nothing is wrong with it any more: " + fleet);
  }

  @Test
  // Found by this test, fixed: with persistent workers max_nodes was the worker type's capacity (0), not the fleet's.
  void aPersistentWorkersFleetReportsTheNodesItMayHave() throws Exception {
    FakeDstack fake = fake(new JsonObject());
    deploy(config(fake, Map.of("DSTACK_WORKER_MODE", "persistent", "PUBLIC_URL", "http://127.0.0.1:9")));
    JsonObject fleet = ensure(new JsonObject().put("gpu_type", "MI300X"));
    assertEquals("worker", fleet.getString("backend"), "the type is served by workers on the fleet");
    assertEquals(true, fleet.getBoolean("ready"), fleet.encode());
    int onDstack = dstackFleet(fake).getJsonObject("spec").getJsonObject("configuration")
        .getJsonObject("nodes").getInteger("max");
    assertEquals(2, onDstack, "the fleet on dstack may have AMD_FLEET_MAX_NODES nodes");
    assertEquals(onDstack, fleet.getInteger("max_nodes"), "max_nodes should be the fleet's: " + fleet);
    // The worker run keeps the machine for AMD_FLEET_IDLE_DURATION; its instance must not idle that long again.
    assertEquals("0s", dstackFleet(fake).getJsonObject("spec").getJsonObject("configuration")
        .getValue("idle_duration").toString());
  }
}
