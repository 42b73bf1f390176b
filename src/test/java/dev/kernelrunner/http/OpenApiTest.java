package dev.kernelrunner.http;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.kernelrunner.support.OpenApiCheck;
import io.vertx.openapi.contract.OpenAPIVersion;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/** The description itself: OpenAPI 3.1, every route of the service in it, and the check catches a wrong answer. */
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
        {"GET", "/api/admin/workers"}, {"GET", "/api/problems"}, {"GET", "/api/gpu-types"}, {"GET", "/api/me"},
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
}
