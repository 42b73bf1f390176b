package dev.kernelrunner.flow;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.kernelrunner.Metrics;
import dev.kernelrunner.support.FakeDstack;
import dev.kernelrunner.support.Ports;
import dev.kernelrunner.support.SseClient;
import dev.kernelrunner.support.TempDirs;
import dev.kernelrunner.support.TestService;
import dev.kernelrunner.support.TestService.Response;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The metrics an operator scrapes, from a service whose Vert.x reports into the same registry, after real
 * work (local and dstack submissions, a stream, a cancellation); the alert rules and the dashboard checked
 * by promtool and against what the service really exports; and a real Prometheus scraping it.
 */
class ObservabilityTest {
  private static final Duration WAIT = Duration.ofSeconds(40);
  private static final Pattern UUID = Pattern.compile("[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}");
  private static final Pattern METRIC = Pattern.compile("\\b((?:kernel_runner|vertx|jvm)_[a-z_]+)");
  private static Vertx vertx;
  private static TestService service;
  private static String scrape;
  private static FakeDstack fake;

  @BeforeAll
  static void work() throws Exception {
    PrometheusMeterRegistry registry = Metrics.registry();
    vertx = Metrics.vertx(registry);
    fake = FakeDstack.start(new JsonObject());
    Map<String, String> env = new HashMap<>(fake.serviceEnv());
    service = TestService.start(vertx, env, registry);
    String token = service.userToken("ops");
    String local = service.submit(token, "// agent: ok");
    String cancelled = service.submit(token, "// agent: hang");
    try (SseClient stream = service.events(local, token, Map.of())) {
      stream.untilEnd(WAIT);
    }
    awaitStatus(cancelled, "COMPILING");
    assertEquals(202, service.post("/api/submissions/" + cancelled + "/cancel", token, "").status());
    Response dstack = service.post("/api/submissions", token,
        TestService.submission("// agent: ok", "benchmark").put("gpu_type", "MI300X").encode());
    assertEquals("BENCHMARKED", service.awaitFinished(dstack.json().getString("id"), WAIT).getString("status"));
    assertEquals(200, service.post("/api/admin/fleets/amd-mi300x-fleet/ensure", TestService.ADMIN_TOKEN, "")
        .status(), "fleet state fresh from dstack");
    scrape = service.get("/metrics", null).body();
  }

  @AfterAll
  static void stop() throws Exception {
    service.close();
    fake.close();
    vertx.close().toCompletionStage().toCompletableFuture().get(30, TimeUnit.SECONDS);
  }

  private static void awaitStatus(String id, String status) throws Exception {
    long deadline = System.nanoTime() + WAIT.toNanos();
    while (!status.equals(service.submission(id).getString("status")) && System.nanoTime() < deadline) {
      Thread.sleep(20);
    }
  }

  /** The sum of the samples of {@code name} whose labels contain every one of {@code labels}. */
  private static double sample(String name, String... labels) {
    double sum = 0;
    boolean found = false;
    for (String line : scrape.lines().toList()) {
      if (!line.startsWith(name + "{") && !line.startsWith(name + " ")) {
        continue;
      }
      boolean all = true;
      for (String label : labels) {
        all &= line.contains(label);
      }
      if (all) {
        sum += Double.parseDouble(line.substring(line.lastIndexOf(' ') + 1));
        found = true;
      }
    }
    if (!found) {
      throw new AssertionError("no sample " + name + " " + List.of(labels) + " in the scrape");
    }
    return sum;
  }

  @Test
  void domainMetersCountTheWorkWithBoundedLabels() {
    assertEquals(2, sample("kernel_runner_submissions_accepted_total", "gpu_type=\"local\""));
    assertEquals(1, sample("kernel_runner_submissions_finished_total", "gpu_type=\"local\"", "status=\"BENCHMARKED\""));
    assertEquals(1, sample("kernel_runner_submissions_finished_total", "gpu_type=\"local\"", "status=\"CANCELLED\""));
    assertEquals(1, sample("kernel_runner_cancellations_total", "reason=\"owner\""));
    assertEquals(1, sample("kernel_runner_phase_duration_seconds_count", "gpu_type=\"MI300X\"", "phase=\"provisioning\""));
    assertEquals(2, sample("kernel_runner_phase_duration_seconds_count", "gpu_type=\"local\"", "phase=\"compile\""),
        "compile ended for both local submissions (one by the benchmark, one by the cancel)");
    assertTrue(sample("kernel_runner_phase_duration_seconds_bucket", "phase=\"total\"", "le=\"+Inf\"") >= 1);
    assertTrue(sample("kernel_runner_sse_events_sent_total") >= 9, "the stream's events were counted");
    assertTrue(sample("kernel_runner_cost_usd_total", "gpu_type=\"MI300X\"") > 0, "the dstack run's cost");
    assertEquals(1, sample("kernel_runner_dstack_api_seconds_count", "call=\"runs/apply\"", "outcome=\"ok\""),
        "the task was applied");
    assertEquals(1, sample("kernel_runner_dstack_api_seconds_count", "call=\"fleets/apply\"", "outcome=\"ok\""),
        "the fleet was made");
    assertEquals(1, sample("kernel_runner_fleet_ready", "fleet=\"amd-mi300x-fleet\""));
    assertEquals(1, sample("kernel_runner_fleet_nodes", "status=\"idle\""));
    assertEquals(0, sample("kernel_runner_queue_length", "gpu_type=\"local\""));
    assertEquals(0, sample("kernel_runner_submissions_current", "gpu_type=\"local\"", "status=\"COMPILING\""));
    assertEquals(8, sample("kernel_runner_database_pool_size"));
    // Vert.x's and the JVM's own meters, in the same registry.
    assertTrue(sample("vertx_http_server_requests_total", "code=\"201\"", "method=\"POST\"") >= 3);
    assertTrue(sample("vertx_pool_completed_total", "pool_type=\"sql\"") > 0);
    assertTrue(sample("jvm_memory_used_bytes", "area=\"heap\"") > 0);
    assertFalse(UUID.matcher(scrape).find(), "no submission id in any label");
    assertFalse(scrape.contains("user_id") || scrape.contains("\"ops\""), "no user in any label");
  }

  @Test
  void alertRulesAndTheirTestsPassPromtool() throws Exception {
    assertEquals(0, run(List.of(promtool(), "check", "rules", "monitoring/alerts.yml")), "promtool check rules");
    assertEquals(0, run(List.of(promtool(), "test", "rules", "monitoring/tests/alerts_test.yml")), "promtool test rules");
    assertEquals(0, run(List.of(promtool(), "check", "config", "monitoring/prometheus.yml")), "promtool check config");
  }

  @Test
  void everyMetricTheAlertsAndTheDashboardUseIsExported() throws Exception {
    JsonObject dashboard = new JsonObject(Files.readString(Path.of("monitoring/grafana/dashboard.json")));
    assertEquals("datasource", dashboard.getJsonObject("templating").getJsonArray("list").getJsonObject(0)
        .getString("type"), "a datasource variable, so the dashboard imports anywhere");
    List<String> expressions = dashboardExpressions(dashboard);
    assertTrue(expressions.size() >= 20, expressions.toString());
    Set<String> used = new LinkedHashSet<>();
    for (String text : List.of(Files.readString(Path.of("monitoring/alerts.yml")), String.join("\n", expressions))) {
      Matcher m = METRIC.matcher(text);
      while (m.find()) {
        used.add(m.group(1));
      }
    }
    List<String> missing = used.stream().filter(name -> !scrape.contains("\n" + name + "{")
        && !scrape.contains("\n" + name + " ")).toList();
    assertTrue(missing.isEmpty(), "used by alerts or dashboard but not exported: " + missing);
  }

  @Test
  void aRealPrometheusScrapesTheServiceAndAnswersForDomainMetrics() throws Exception {
    Path dir = TempDirs.directory("prometheus");
    int port = Ports.free();
    Files.writeString(dir.resolve("prometheus.yml"), """
        global:
          scrape_interval: 1s
        scrape_configs:
          - job_name: kernel-runner
            static_configs:
              - targets: ["127.0.0.1:%d"]
        """.formatted(service.port()));
    Process prometheus = new ProcessBuilder(prometheusBinary(), "--config.file=" + dir.resolve("prometheus.yml"),
        "--storage.tsdb.path=" + dir.resolve("data"), "--web.listen-address=127.0.0.1:" + port)
        .redirectErrorStream(true).redirectOutput(dir.resolve("prometheus.log").toFile()).start();
    try {
      HttpClient http = HttpClient.newHttpClient();
      String query = "http://127.0.0.1:" + port + "/api/v1/query?query=";
      double accepted = -1;
      long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
      while (accepted < 0 && System.nanoTime() < deadline) {
        Thread.sleep(500);
        try {
          JsonObject answer = new JsonObject(http.send(HttpRequest.newBuilder(URI.create(query + URLEncoder.encode(
                  "sum(kernel_runner_submissions_accepted_total{job=\"kernel-runner\"})", StandardCharsets.UTF_8)))
              .build(), HttpResponse.BodyHandlers.ofString()).body());
          JsonArray result = answer.getJsonObject("data").getJsonArray("result");
          if (!result.isEmpty()) {
            accepted = Double.parseDouble(result.getJsonObject(0).getJsonArray("value").getString(1));
          }
        } catch (java.io.IOException e) {
          // not listening yet
        }
      }
      assertEquals(3, accepted, "Prometheus scraped the service: " + Files.readString(dir.resolve("prometheus.log")));
      // Every dashboard query is valid PromQL for this Prometheus.
      JsonObject dashboard = new JsonObject(Files.readString(Path.of("monitoring/grafana/dashboard.json")));
      for (String expr : dashboardExpressions(dashboard)) {
        String concrete = expr.replace("$__rate_interval", "1m");
        JsonObject answer = new JsonObject(http.send(HttpRequest.newBuilder(URI.create(query
            + URLEncoder.encode(concrete, StandardCharsets.UTF_8))).build(), HttpResponse.BodyHandlers.ofString()).body());
        assertEquals("success", answer.getString("status"), concrete + ": " + answer.encode());
      }
    } finally {
      prometheus.destroy();
      prometheus.waitFor(10, TimeUnit.SECONDS);
    }
  }

  @Test
  void metricsCanBePutBehindTheirOwnToken() throws Exception {
    try (TestService guarded = TestService.start(vertx, Map.of("METRICS_TOKEN", "scrape-secret"),
        Metrics.registry())) {
      assertEquals(401, guarded.get("/metrics", null).status());
      assertEquals(401, guarded.get("/metrics", TestService.ADMIN_TOKEN).status(), "an API token is not the scrape token");
      Response ok = guarded.get("/metrics", "scrape-secret");
      assertEquals(200, ok.status());
      assertTrue(ok.body().contains("kernel_runner_queue_length"));
      assertEquals(200, guarded.get("/health/live", null).status(), "health stays open");
    }
    assertEquals(200, service.get("/metrics", null).status(), "without METRICS_TOKEN scrapers need nothing");
  }

  private static List<String> dashboardExpressions(JsonObject dashboard) {
    List<String> expressions = new ArrayList<>();
    for (Object item : dashboard.getJsonArray("panels")) {
      JsonObject panel = (JsonObject) item;
      for (Object target : panel.getJsonArray("targets", new JsonArray())) {
        expressions.add(((JsonObject) target).getString("expr"));
      }
    }
    return expressions;
  }

  private static String promtool() {
    return Ports.installed("promtool", "prometheus");
  }

  private static String prometheusBinary() {
    return Ports.installed("prometheus", "prometheus");
  }

  private static int run(List<String> argv) throws Exception {
    Process process = new ProcessBuilder(argv).redirectErrorStream(true).start();
    String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    int code = process.waitFor();
    if (code != 0) {
      System.err.println(String.join(" ", argv) + ":\n" + output);
    }
    return code;
  }
}
