package dev.kernelrunner.load;

import dev.kernelrunner.backend.AgentOutput;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpClient;
import io.vertx.core.http.HttpClientResponse;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.PoolOptions;
import io.vertx.core.http.RequestOptions;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.core.parsetools.RecordParser;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Workers played by the load generator (-Dworkers=N -DreplayWorkers=true): each slot holds a job stream of the
 * worker API and, for each job, replays what the load agent prints (the same events, each stamped with its
 * sent_ns and signed with the job's key), posting every line as it is made. So the benchmark measures the
 * service's share of the worker path, without 50 Python workers and 200 agent processes on the same two cores.
 */
final class ReplayWorkers {
  private static final Pattern EVENTS = Pattern.compile("events=(\\d+)");
  private static final Pattern INTERVAL = Pattern.compile("interval_ms=(\\d+)");

  private final Vertx vertx;
  private final HttpClient http;
  private final String token;
  private final List<Slot> slots = new ArrayList<>();

  ReplayWorkers(Vertx vertx, String host, int port, String token) {
    this.vertx = vertx;
    this.token = token;
    this.http = vertx.createHttpClient(new io.vertx.core.http.HttpClientOptions().setDefaultHost(host)
        .setDefaultPort(port).setKeepAlive(true), new PoolOptions().setHttp1MaxSize(2000));
  }

  /** Opens {@code workers} x {@code slotsEach} job streams for {@code gpuType}. */
  Future<Void> start(int workers, int slotsEach, String gpuType) {
    List<Future<Void>> opened = new ArrayList<>();
    for (int w = 0; w < workers; w++) {
      for (int s = 0; s < slotsEach; s++) {
        Slot slot = new Slot("replay-" + w + ":" + s, gpuType);
        slots.add(slot);
        opened.add(slot.open());
      }
    }
    return Future.all(opened).mapEmpty();
  }

  /** One worker of the service: one job at a time. */
  private final class Slot {
    final String id;
    final String gpuType;
    Job job;

    Slot(String id, String gpuType) {
      this.id = id;
      this.gpuType = gpuType;
    }

    Future<Void> open() {
      return http.request(new RequestOptions().setMethod(HttpMethod.GET)
              .setURI("/api/worker/stream?worker_id=" + id + "&gpu_type=" + gpuType + "&host=load&device=replay")
              .putHeader("Authorization", "Bearer " + token).putHeader("Accept", "text/event-stream"))
          .compose(request -> request.send())
          .compose(response -> {
            if (response.statusCode() != 200) {
              return Future.failedFuture("worker stream refused: " + response.statusCode());
            }
            read(response);
            return Future.succeededFuture();
          });
    }

    private void read(HttpClientResponse response) {
      String[] event = {null};
      StringBuilder data = new StringBuilder();
      RecordParser lines = RecordParser.newDelimited("\n", line -> {
        String text = line.toString();
        if (text.isEmpty()) {
          if (event[0] != null) {
            on(event[0], new JsonObject(data.toString()));
          }
          event[0] = null;
          data.setLength(0);
        } else if (text.startsWith("event: ")) {
          event[0] = text.substring(7);
        } else if (text.startsWith("data: ")) {
          data.append(text.substring(6));
        }
      });
      response.handler(lines);
    }

    private void on(String event, JsonObject data) {
      if (event.equals("job")) {
        job = new Job(this, data.getString("job_id"), data.getJsonObject("payload"));
        job.run();
      } else if (event.equals("cancel") && job != null && job.id.equals(data.getString("job_id"))) {
        job.stop(-15);
      }
    }
  }

  /** One job's replay: the load agent's events, posted one line per request as they are made. */
  private final class Job {
    final Slot slot;
    final String id;
    final AgentOutput.EventKey key;
    final List<String> lines = new ArrayList<>();
    final int events;
    final long interval;
    final boolean hang;
    int step;
    int posted;
    boolean posting;
    Integer exitCode;
    long timer = -1;
    final List<JsonObject> results = new ArrayList<>();

    Job(Slot slot, String id, JsonObject payload) {
      this.slot = slot;
      this.id = id;
      this.key = AgentOutput.EventKey.of(payload.getString("event_key"));
      String code = payload.getString("code");
      this.hang = code.contains("load: hang");
      Matcher events = EVENTS.matcher(code);
      Matcher interval = INTERVAL.matcher(code);
      this.events = events.find() ? Integer.parseInt(events.group(1)) : 50;
      this.interval = interval.find() ? Long.parseLong(interval.group(1)) : 20;
    }

    void run() {
      emit("COMPILING", new JsonObject());
      if (!hang) {
        timer = vertx.setPeriodic(Math.max(1, interval), t -> next());
      }
    }

    /** The load agent's sequence: CHECKING, TEST_RESULT x t, CHECKED, BENCHMARKING, BENCHMARK_RESULT x b, end. */
    private void next() {
      int perPhase = Math.max(0, events - 5);
      int tests = perPhase / 2;
      int benches = perPhase - tests;
      step++;
      if (step == 1) {
        emit("CHECKING", new JsonObject().put("total_tests", tests));
      } else if (step <= 1 + tests) {
        int i = step - 1;
        emit("TEST_RESULT", new JsonObject().put("result", new JsonObject().put("test_id", i).put("name", "t" + i)
            .put("status", "PASSED")));
      } else if (step == 2 + tests) {
        emit("CHECKED", new JsonObject().put("passed_tests", tests).put("total_tests", tests));
      } else if (step == 3 + tests) {
        emit("BENCHMARKING", new JsonObject().put("total_tests", benches));
      } else if (step <= 3 + tests + benches) {
        int i = step - 3 - tests;
        JsonObject result = new JsonObject().put("test_id", i).put("name", "t" + i).put("runtime_ms", 0.1)
            .put("gflops", 1.0);
        results.add(result);
        emit("BENCHMARK_RESULT", new JsonObject().put("result", result));
      } else {
        emit("BENCHMARKED", new JsonObject().put("avg_runtime_ms", 0.1).put("avg_gflops", 1.0)
            .put("test_results", new JsonArray(new ArrayList<>(results))));
        stop(0);
      }
    }

    void stop(int code) {
      vertx.cancelTimer(timer);
      if (exitCode == null) {
        exitCode = code;
        post();
      }
    }

    private void emit(String type, JsonObject fields) {
      Instant now = Instant.now();
      fields.put("type", type).put("sent_ns", now.getEpochSecond() * 1_000_000_000L + now.getNano());
      lines.add(AgentOutput.signedLine(key, fields.encode()));
      post();
    }

    /** One request at a time per job: the lines made meanwhile go in the next. */
    private void post() {
      if (posting) {
        return;
      }
      boolean exit = posted == lines.size();
      if (exit && exitCode == null) {
        return;
      }
      posting = true;
      JsonObject body = exit ? new JsonObject().put("lines", lines.size()).put("exit_code", exitCode)
          : new JsonObject().put("from", posted).put("lines", new JsonArray(new ArrayList<>(
              lines.subList(posted, lines.size()))));
      http.request(new RequestOptions().setMethod(HttpMethod.POST)
              .setURI("/api/worker/jobs/" + id + (exit ? "/exit" : "/lines"))
              .putHeader("Authorization", "Bearer " + token).putHeader("X-Worker-Id", slot.id)
              .putHeader("Content-Type", "application/json"))
          .compose(request -> request.send(body.encode()))
          .compose(HttpClientResponse::body)
          .onComplete(ar -> {
            posting = false;
            if (ar.failed()) {
              vertx.setTimer(50, t -> post());
              return;
            }
            JsonObject reply = new JsonObject(ar.result() == null ? Buffer.buffer("{}") : ar.result());
            if (exit) {
              if (reply.getBoolean("ended", false) || !reply.containsKey("consumed")) {
                if (slot.job == this) {
                  slot.job = null;
                }
                return;
              }
              posted = reply.getInteger("consumed");
            } else if (reply.containsKey("consumed")) {
              posted = reply.getInteger("consumed");
            }
            post();
          });
    }
  }
}
