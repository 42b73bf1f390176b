package dev.kernelrunner.flow;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.kernelrunner.support.SseClient;
import dev.kernelrunner.support.TestService;
import dev.kernelrunner.support.TestService.Response;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.junit5.VertxExtension;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** Every way a request can be wrong gets a clear status and a JSON body naming the field. */
@ExtendWith(VertxExtension.class)
class ValidationTest {
  private static TestService service;
  private static String frank;

  @BeforeAll
  static void start(Vertx vertx) throws Exception {
    service = TestService.start(vertx, Map.of("MAX_CODE_BYTES", "1000", "MAX_ACTIVE_PER_USER", "2",
        "LOCAL_MAX_CONCURRENT", "1"));
    frank = service.userToken("frank");
  }

  @AfterAll
  static void stop() throws Exception {
    service.close();
  }

  private static List<String> fields(Response response) {
    return response.json().getJsonArray("details").stream().map(d -> ((JsonObject) d).getString("field")).toList();
  }

  private Response submit(JsonObject body) throws Exception {
    return service.post("/api/submissions", frank, body.encode());
  }

  private static JsonObject valid() {
    return TestService.submission("// agent: ok", "benchmark");
  }

  @Test
  void malformedJsonNamesTheBody() throws Exception {
    Response response = service.post("/api/submissions", frank, "{\"problem\": ");
    assertEquals(400, response.status());
    assertEquals("validation", response.json().getString("error"));
    assertEquals(List.of("body"), fields(response));
    assertEquals(List.of("body"), fields(service.post("/api/submissions", frank, "[1, 2]")));
  }

  @Test
  void missingFieldsAreEachNamed() throws Exception {
    Response response = submit(new JsonObject());
    assertEquals(400, response.status());
    assertEquals(List.of("problem", "language", "gpu_type", "code"), fields(response));
  }

  @Test
  void unknownValuesAreEachNamed() throws Exception {
    assertEquals(List.of("problem"), fields(submit(valid().put("problem", "no-such-problem"))));
    assertEquals(List.of("language"), fields(submit(valid().put("language", "fortran"))));
    assertEquals(List.of("gpu_type"), fields(submit(valid().put("gpu_type", "H9000"))));
    assertEquals(List.of("gpu_type"), fields(submit(valid().put("gpu_type", "mi300x"))),
        "GPU type names are exact");
    assertEquals(List.of("dtype"), fields(submit(valid().put("dtype", "float64"))));
    assertEquals(List.of("mode"), fields(submit(valid().put("mode", "trace"))));
    assertEquals(List.of("cancel_on_disconnect"), fields(submit(valid().put("cancel_on_disconnect", "yes"))));
    assertEquals(List.of("code"), fields(submit(valid().put("code", "   \n"))));
    assertEquals(List.of("code"), fields(submit(valid().put("code", 42))));
    Response typed = submit(valid().put("language", 7));
    assertEquals(400, typed.status());
  }

  @Test
  void oversizedCodeIs413() throws Exception {
    Response response = submit(valid().put("code", "x".repeat(1001)));
    assertEquals(413, response.status());
    assertEquals(List.of("code"), fields(response));
    Response huge = submit(valid().put("code", "y".repeat(200_000)));
    assertEquals(413, huge.status(), "refused by the body limit before parsing");
    assertEquals(List.of("code"), fields(huge));
    assertEquals(201, submit(valid().put("code", "// agent: ok\n" + "z".repeat(980))).status());
  }

  @Test
  void authenticationAndAuthorization() throws Exception {
    assertEquals(401, service.post("/api/submissions", null, valid().encode()).status());
    assertEquals(401, service.post("/api/submissions", "kr_not-a-token", valid().encode()).status());
    assertEquals("unauthorized", service.get("/api/problems", "nope").json().getString("error"));
    Response notAdmin = service.post("/api/admin/tokens", frank, new JsonObject().put("user_id", "x").encode());
    assertEquals(403, notAdmin.status());
    Response badToken = service.post("/api/admin/tokens", TestService.ADMIN_TOKEN,
        new JsonObject().put("user_id", "has space").put("role", "root").encode());
    assertEquals(400, badToken.status());
    assertEquals(List.of("user_id", "role"), fields(badToken));
    String adminToken = service.post("/api/admin/tokens", TestService.ADMIN_TOKEN,
        new JsonObject().put("user_id", "grace").put("role", "admin").encode()).json().getString("token");
    assertEquals(200, service.get("/api/submissions?limit=1", adminToken).status());
    assertEquals(400, service.get("/api/submissions?limit=0", frank).status());
    assertEquals(List.of("before"), fields(service.get("/api/submissions?before=yesterday", frank)));
    assertEquals(404, service.get("/api/submissions/not-a-uuid", frank).status());
    assertEquals(List.of("submission_id"), fields(service.post("/api/submissions/cancel", frank, "{}")));
  }

  @Test
  void tokensAreStoredHashed() throws Exception {
    String token = service.userToken("henry");
    try (Connection c = jdbc(); ResultSet rs = c.createStatement().executeQuery(
        "SELECT token_hash FROM api_tokens WHERE user_id = 'henry'")) {
      assertTrue(rs.next());
      String stored = rs.getString(1);
      assertTrue(!stored.contains(token) && stored.length() == 64, stored);
    }
  }

  @Test
  void badLastEventIdIsRefused() throws Exception {
    String id = service.submit(frank, "// agent: ok");
    service.awaitFinished(id, java.time.Duration.ofSeconds(30));
    try (SseClient stream = service.events(id, frank, Map.of("Last-Event-ID", "abc"))) {
      assertEquals(400, stream.status());
      assertEquals("last_event_id", stream.errorJson().getJsonArray("details").getJsonObject(0).getString("field"));
    }
  }

  @Test
  void tooManyActiveSubmissionsIs429() throws Exception {
    String limited = service.userToken("ivan");
    String first = service.submit(limited, "// agent: ok\n// delay: 0.5");
    String second = service.submit(limited, "// agent: ok");
    Response third = service.post("/api/submissions", limited, valid().encode());
    assertEquals(429, third.status(), third.body());
    assertEquals("too_many_active", third.json().getString("error"));
    assertEquals("10", third.headers().get("retry-after").get(0), "one may end soon: try again in a few seconds");
    assertEquals(2, service.get("/api/submissions", limited).json().getJsonArray("submissions").size(),
        "nothing stored for the refused one");
    service.awaitFinished(first, java.time.Duration.ofSeconds(30));
    service.awaitFinished(second, java.time.Duration.ofSeconds(30));
    assertEquals(201, service.post("/api/submissions", limited, valid().encode()).status());
  }

  @Test
  void theActiveLimitHoldsUnderConcurrentCreates() throws Exception {
    String racer = service.userToken("rita");
    java.util.List<java.util.concurrent.CompletableFuture<Integer>> posts = new java.util.ArrayList<>();
    for (int i = 0; i < 20; i++) {
      posts.add(java.util.concurrent.CompletableFuture.supplyAsync(() -> {
        try {
          return service.post("/api/submissions", racer, valid().put("code", "// agent: ok\n// delay: 0.3")
              .encode()).status();
        } catch (Exception e) {
          throw new IllegalStateException(e);
        }
      }));
    }
    java.util.List<Integer> statuses = posts.stream().map(java.util.concurrent.CompletableFuture::join).toList();
    assertEquals(2, statuses.stream().filter(code -> code == 201).count(), statuses.toString());
    assertEquals(18, statuses.stream().filter(code -> code == 429).count(), statuses.toString());
    for (Object item : service.get("/api/submissions", racer).json().getJsonArray("submissions")) {
      service.awaitFinished(((io.vertx.core.json.JsonObject) item).getString("id"), java.time.Duration.ofSeconds(30));
    }
    assertEquals(201, service.post("/api/submissions", racer, valid().encode()).status(),
        "finished submissions give their place back");
  }

  @Test
  void concurrentCreatesOfManyUsersKeepEachUsersLimit() throws Exception {
    // Creates are written in batches; a batch mixes users, and one user's refusal must not touch the others.
    java.util.List<String> users = new java.util.ArrayList<>();
    for (int u = 0; u < 5; u++) {
      users.add(service.userToken("batch" + u));
    }
    java.util.concurrent.ExecutorService posters = java.util.concurrent.Executors.newFixedThreadPool(15);
    try {
      java.util.List<java.util.concurrent.Future<String>> posts = new java.util.ArrayList<>();
      for (int i = 0; i < 3; i++) {
        for (String user : users) {
          // Long enough that none finishes (and frees its place) before all have been posted.
          posts.add(posters.submit(() -> user + " " + service.post("/api/submissions", user,
              valid().put("code", "// agent: ok\n// delay: 5").encode()).status()));
        }
      }
      java.util.List<String> outcomes = new java.util.ArrayList<>();
      for (var post : posts) {
        outcomes.add(post.get());
      }
      for (String user : users) {
        assertEquals(2, outcomes.stream().filter(o -> o.equals(user + " 201")).count(), outcomes.toString());
        assertEquals(1, outcomes.stream().filter(o -> o.equals(user + " 429")).count(), outcomes.toString());
        var stored = service.get("/api/submissions", user).json().getJsonArray("submissions");
        assertEquals(2, stored.size(), "only the accepted ones are stored");
        for (Object item : stored) {
          String id = ((io.vertx.core.json.JsonObject) item).getString("id");
          assertEquals(202, service.post("/api/submissions/" + id + "/cancel", user, "").status());
        }
      }
    } finally {
      posters.shutdownNow();
    }
  }

  @Test
  void databaseDownIs503AndNothingHalfWritten() throws Exception {
    String url = service.databaseUrl();
    String name = url.substring(url.lastIndexOf('/') + 1);
    long before = countSubmissions();
    try (Connection admin = adminConnection()) {
      admin.createStatement().execute("ALTER DATABASE " + name + " WITH ALLOW_CONNECTIONS false");
      try {
        admin.createStatement().execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '"
            + name + "'");
        Response submit = submit(valid());
        assertEquals(503, submit.status(), submit.body());
        assertEquals("unavailable", submit.json().getString("error"));
        assertEquals(503, service.get("/health/ready", null).status());
      } finally {
        admin.createStatement().execute("ALTER DATABASE " + name + " WITH ALLOW_CONNECTIONS true");
      }
    }
    assertEquals(before, countSubmissions());
    assertEquals(200, service.get("/health/ready", null).status());
  }

  private static long countSubmissions() throws Exception {
    try (Connection c = jdbc(); ResultSet rs = c.createStatement().executeQuery("SELECT count(*) FROM submissions")) {
      rs.next();
      return rs.getLong(1);
    }
  }

  private static Connection jdbc() throws Exception {
    return connect(service.databaseUrl());
  }

  private static Connection adminConnection() throws Exception {
    String url = service.databaseUrl();
    return connect(url.substring(0, url.lastIndexOf('/')) + "/postgres");
  }

  static Connection connect(String url) throws Exception {
    java.net.URI uri = java.net.URI.create(url);
    String[] user = uri.getUserInfo().split(":");
    return DriverManager.getConnection("jdbc:postgresql://" + uri.getHost() + ":" + uri.getPort() + uri.getPath(),
        user[0], user[1]);
  }
}
