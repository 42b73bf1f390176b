package dev.kernelrunner.http;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.kernelrunner.support.OpenApiCheck;
import dev.kernelrunner.support.TestService;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonObject;
import io.vertx.junit5.VertxExtension;
import io.vertx.openapi.contract.OpenAPIVersion;
import java.io.InputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The description itself: OpenAPI 3.1, every route of the service in it, the check catches a wrong answer, and
 * the errors a real service sends are declared for their routes (TestService checks each answer it gets).
 */
@ExtendWith(VertxExtension.class)
class OpenApiTest {

  @Test
  void theDescriptionIsOpenApi31AndNamesEveryRoute() throws Exception {
    var contract = OpenApiCheck.load();
    assertEquals(OpenAPIVersion.V3_1, contract.getVersion());
    String[][] routes = {
        {"GET", "/openapi.json"}, {"GET", "/health/live"}, {"GET", "/health/ready"}, {"GET", "/metrics"},
        {"POST", "/api/submissions"}, {"GET", "/api/submissions"}, {"POST", "/api/submissions/cancel"},
        {"GET", "/api/submissions/x"}, {"GET", "/api/submissions/x/profile"}, {"GET", "/api/submissions/x/events"},
        {"POST", "/api/submissions/x/cancel"}, {"POST", "/api/admin/submissions/x/cancel"},
        {"POST", "/api/admin/submissions/x/invalidate"}, {"DELETE", "/api/admin/submissions/x/invalidate"},
        {"POST", "/api/admin/tokens"}, {"GET", "/api/admin/tokens"}, {"DELETE", "/api/admin/tokens/x"},
        {"GET", "/api/admin/workers"}, {"GET", "/api/problems"}, {"GET", "/api/problems/{slug}"}, {"GET", "/api/baselines"}, {"GET", "/api/baselines/export"},
        {"POST", "/api/admin/baselines"},
        {"GET", "/api/gpu-types"}, {"GET", "/api/me"},
        {"GET", "/api/fleets"}, {"POST", "/api/admin/fleets/x/ensure"}, {"GET", "/api/leaderboards"},
        {"GET", "/api/leaderboards/x"}, {"GET", "/api/worker/stream"}, {"POST", "/api/worker/jobs/x/lines"},
        {"POST", "/api/worker/jobs/x/exit"}, {"POST", "/api/worker/enroll"},
        {"DELETE", "/api/admin/tokens/x/machine"}, {"POST", "/api/admin/workers/x/release"}};
    for (String[] route : routes) {
      assertNotNull(contract.findOperation(route[1], io.vertx.core.http.HttpMethod.valueOf(route[0])),
          route[0] + " " + route[1]);
    }
    assertEquals(routes.length, contract.operations().size(), "and nothing else");
  }

  @Test
  void aResponseThatDoesNotMatchFails() {
    byte[] wrong = "{\"id\": \"x\", \"status\": \"NOT_A_STATUS\"}".getBytes(StandardCharsets.UTF_8);
    assertThrows(AssertionError.class, () -> OpenApiCheck.check("POST", "/api/submissions/x/cancel", 202,
        "application/json", wrong));
    assertThrows(AssertionError.class, () -> OpenApiCheck.check("GET", "/api/nothing-here", 200,
        "application/json", "{}".getBytes(StandardCharsets.UTF_8)));
    OpenApiCheck.check("POST", "/api/submissions/x/cancel", 202, "application/json",
        "{\"id\": \"x\", \"status\": \"CANCELLED\"}".getBytes(StandardCharsets.UTF_8));
  }

  @Test
  void anErrorARouteDoesNotDeclareFails() {
    byte[] error = "{\"error\": \"conflict\", \"message\": \"x\"}".getBytes(StandardCharsets.UTF_8);
    assertThrows(AssertionError.class, () -> OpenApiCheck.check("GET", "/api/me", 409, "application/json", error));
    OpenApiCheck.check("GET", "/api/me", 500, "application/json", error);
  }

  @Test
  void realErrorsAreDeclaredWithTheirBodies(Vertx vertx) throws Exception {
    try (TestService service = TestService.start(vertx, Map.of("SSE_MAX_STREAMS_PER_USER", "1"))) {
      String user = service.userToken("ana");
      String admin = TestService.ADMIN_TOKEN;
      assertEquals(401, service.get("/api/me", null).status());
      assertEquals(401, service.get("/api/problems", "no-such-token").status());
      assertEquals(403, service.get("/api/admin/tokens", user).status());
      assertEquals(403, service.get("/api/worker/stream?worker_id=w&gpu_type=x", user).status());
      assertEquals(404, service.get("/api/submissions/00000000-0000-0000-0000-000000000000", user).status());
      assertEquals(404, service.get("/api/submissions/not-an-id/profile", user).status());
      assertEquals(404, service.post("/api/submissions/00000000-0000-0000-0000-000000000000/cancel", user, "")
          .status());
      assertEquals(400, service.get("/api/submissions?limit=0", user).status());
      assertEquals(400, service.get("/api/admin/tokens?before=nonsense", admin).status());
      assertEquals(400, service.delete("/api/admin/tokens/nonsense", admin).status());
      assertEquals(404, service.delete("/api/admin/tokens/0123456789abcdef", admin).status());
      assertEquals(400, service.post("/api/submissions", user, "[]").status());
      assertEquals(400, service.post("/api/submissions/cancel", user, "{}").status());
      assertEquals(400, service.post("/api/admin/tokens", admin, "{\"role\": \"root\"}").status());
      assertEquals(400, service.get("/api/leaderboards/softmax", user).status());
      assertEquals(404, service.get("/api/leaderboards/no-such-problem?gpu_type=x", user).status());
      assertEquals(404, service.post("/api/admin/submissions/00000000-0000-0000-0000-000000000000/invalidate",
          admin, new JsonObject().put("reason", "test").encode()).status());
      assertEquals(400, service.get("/api/submissions/x/events?last_event_id=-1", user).status());
      assertEquals(413, service.post("/api/submissions", user, "{\"code\": \"" + "x".repeat(3_000_000) + "\"}")
          .status());
      // Headers over 16 KiB: the HTTP server's own answer, before any route (declared as HeaderTooLarge).
      try (Socket socket = new Socket("127.0.0.1", service.port())) {
        socket.getOutputStream().write(("GET /health/live HTTP/1.1\r\nHost: x\r\nX-Big: " + "a".repeat(20_000)
            + "\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
        socket.setSoTimeout(10_000);
        InputStream in = socket.getInputStream();
        String answer = new String(in.readNBytes(12), StandardCharsets.US_ASCII);
        assertEquals("HTTP/1.1 431", answer);
        OpenApiCheck.check("GET", "/health/live", 431, null, new byte[0]);
      }
      // A request line over 4,096 bytes: the server's answer too, 414 (declared as RequestLineTooLong).
      try (Socket socket = new Socket("127.0.0.1", service.port())) {
        socket.getOutputStream().write(("GET /health/live?x=" + "a".repeat(5_000) + " HTTP/1.1\r\nHost: x\r\n\r\n")
            .getBytes(StandardCharsets.US_ASCII));
        socket.setSoTimeout(10_000);
        String answer = new String(socket.getInputStream().readNBytes(12), StandardCharsets.US_ASCII);
        assertTrue(answer.matches("HTTP/1\\.[01] 414"), answer);  // 1.0: the request line was never read whole
        OpenApiCheck.check("GET", "/health/live", 414, null, new byte[0]);
      }
    }
  }
}
