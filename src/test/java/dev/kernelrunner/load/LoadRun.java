package dev.kernelrunner.load;

import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpClient;
import io.vertx.core.http.HttpClientOptions;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.PoolOptions;
import io.vertx.core.http.RequestOptions;
import io.vertx.core.json.JsonObject;
import io.vertx.pgclient.PgBuilder;
import io.vertx.pgclient.PgConnectOptions;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Tuple;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;

/**
 * The phases of the load benchmark against a running service (its own HTTP and SSE clients, Vert.x based):
 * a plain-INSERT baseline in the service's database, submission acceptance, many open streams, event latency
 * with many submissions running, and cancellation. Every stream checks its sequence numbers: an event lost
 * (a gap) or duplicated is counted. Used by {@link LoadBenchmark} (full size) and by the test suite (small).
 */
public final class LoadRun implements AutoCloseable {
  private final Vertx vertx;
  private final HttpClient http;
  private final String host;
  private final int port;
  private final String token;
  private final List<String> users = new ArrayList<>();

  /** What one phase measured. */
  public record Figures(String phase, JsonObject values) {}

  public LoadRun(Vertx vertx, String host, int port, String token, int maxConnections) {
    this.vertx = vertx;
    this.host = host;
    this.port = port;
    this.token = token;
    this.http = vertx.createHttpClient(new HttpClientOptions().setDefaultHost(host).setDefaultPort(port)
        .setKeepAlive(true).setIdleTimeout(0), new PoolOptions().setHttp1MaxSize(maxConnections)
        .setMaxWaitQueueSize(-1));
  }

  // ---- plain INSERT baseline

  /** {@code rows} single-row INSERTs (autocommit) over a pool of {@code poolSize}, as many in flight as connections. */
  public Figures insertBaseline(String databaseUrl, int rows, int poolSize) throws Exception {
    Pool pool = PgBuilder.pool().with(new io.vertx.sqlclient.PoolOptions().setMaxSize(poolSize))
        .connectingTo(PgConnectOptions.fromUri(databaseUrl)).using(vertx).build();
    try {
      await(pool.query("CREATE TABLE IF NOT EXISTS load_baseline (id bigserial PRIMARY KEY, user_id text NOT NULL, "
          + "payload jsonb NOT NULL, created_at timestamptz NOT NULL DEFAULT now())").execute());
      await(pool.query("TRUNCATE load_baseline").execute());
      AtomicInteger next = new AtomicInteger();
      long started = System.nanoTime();
      List<Future<?>> workers = new ArrayList<>();
      for (int w = 0; w < poolSize * 2; w++) {
        workers.add(chain(() -> next.getAndIncrement() < rows
            ? pool.preparedQuery("INSERT INTO load_baseline (user_id, payload) VALUES ($1, $2)")
                .execute(Tuple.of("load", new JsonObject().put("code", "x".repeat(200)))).mapEmpty()
            : null));
      }
      await(Future.all(workers));
      double seconds = (System.nanoTime() - started) / 1e9;
      return new Figures("insert baseline", new JsonObject().put("rows", rows).put("seconds", seconds)
          .put("per_second", rows / seconds));
    } finally {
      await(pool.close());
    }
  }

  /** Makes {@code count} user tokens (a deadline hour has many authors, each with their own active limit). */
  public void users(int count) throws Exception {
    for (int i = 0; i < count; i++) {
      JsonObject created = await(post("/api/admin/tokens", new JsonObject().put("user_id", "load-" + i), token));
      users.add(created.getString("token"));
    }
  }

  // ---- acceptance

  /** {@code count} submissions POSTed, {@code concurrency} at a time; the rate of 201s. */
  public Figures accept(int count, int concurrency, String code) throws Exception {
    AtomicInteger next = new AtomicInteger();
    AtomicInteger refused = new AtomicInteger();
    ConcurrentLinkedQueue<Long> latencies = new ConcurrentLinkedQueue<>();
    long started = System.nanoTime();
    List<Future<?>> workers = new ArrayList<>();
    for (int w = 0; w < concurrency; w++) {
      workers.add(chain(() -> {
        if (next.getAndIncrement() >= count) {
          return null;
        }
        long t0 = System.nanoTime();
        String author = users.isEmpty() ? token : users.get(next.get() % users.size());
        return post("/api/submissions", submission(code), author).map(response -> {
          latencies.add(System.nanoTime() - t0);
          if (response.getInteger("_status") != 201) {
            refused.incrementAndGet();
          }
          return null;
        });
      }));
    }
    await(Future.all(workers));
    double seconds = (System.nanoTime() - started) / 1e9;
    return new Figures("acceptance", new JsonObject().put("submissions", count).put("refused", refused.get())
        .put("seconds", seconds).put("per_second", count / seconds)
        .put("p50_ms", percentile(latencies, 50)).put("p99_ms", percentile(latencies, 99)));
  }

  // ---- streams

  /** One open SSE stream: its frames' sequence numbers, heartbeats, and whether it ended. */
  public static final class Stream {
    volatile String submissionId;
    final List<Integer> seqs = Collections.synchronizedList(new ArrayList<>());
    final AtomicInteger heartbeats = new AtomicInteger();
    final List<Long> latenciesNs = Collections.synchronizedList(new ArrayList<>());
    /** Agent line -> stored (the event's "at"), and stored -> received: where the latency goes. */
    final List<Long> toStoredNs = Collections.synchronizedList(new ArrayList<>());
    final List<Long> toClientNs = Collections.synchronizedList(new ArrayList<>());
    /** When each latency's event was printed (the agent's clock, ns since the epoch). */
    final List<Long> sentNs = Collections.synchronizedList(new ArrayList<>());
    final Promise<Void> ended = Promise.promise();
    final Promise<Void> opened = Promise.promise();
    volatile String terminal;
    volatile io.vertx.core.http.HttpConnection connection;
    private final StringBuilder pending = new StringBuilder();

    Stream(String submissionId) {
      this.submissionId = submissionId;
    }

    void feed(Buffer buffer) {
      pending.append(buffer.toString());
      int end;
      while ((end = pending.indexOf("\n\n")) >= 0) {
        String block = pending.substring(0, end);
        pending.delete(0, end + 2);
        frame(block);
      }
    }

    /**
     * Reads what the figures need from the frame's lines without building a JSON object (the generator shares
     * the machine with the service; its own CPU is kept small): the seq from the {@code id:} line, the agent's
     * {@code sent_ns} and the stored {@code at} from the data.
     */
    private void frame(String block) {
      String event = null;
      String data = null;
      String id = null;
      for (String line : block.split("\n")) {
        if (line.startsWith(":")) {
          heartbeats.incrementAndGet();
        } else if (line.startsWith("event: ")) {
          event = line.substring(7);
        } else if (line.startsWith("data: ")) {
          data = line.substring(6);
        } else if (line.startsWith("id: ")) {
          id = line.substring(4);
        }
      }
      if (data == null) {
        return;
      }
      if (submissionId == null) {
        submissionId = new JsonObject(data).getString("submission_id");
      }
      seqs.add(id != null ? Integer.parseInt(id.trim()) : new JsonObject(data).getInteger("seq"));
      String sent = value(data, "sent_ns");
      if (sent != null) {
        Instant now = Instant.now();
        long received = now.getEpochSecond() * 1_000_000_000L + now.getNano();
        long sentNanos = Long.parseLong(sent);
        latenciesNs.add(received - sentNanos);
        sentNs.add(sentNanos);
        Instant at = Instant.parse(value(data, "at"));
        long stored = at.getEpochSecond() * 1_000_000_000L + at.getNano();
        toStoredNs.add(stored - sentNanos);
        toClientNs.add(received - stored);
      }
      if (event != null && List.of("BENCHMARKED", "COMPILE_ERROR", "WRONG_ANSWER", "RUNTIME_ERROR",
          "TIME_LIMIT_EXCEEDED", "ERROR", "CANCELLED").contains(event)) {
        terminal = event;
      }
    }

    /** The last top-level-looking {@code "key": value} in {@code json} (a number or a plain string), or null. */
    static String value(String json, String key) {
      int at = json.lastIndexOf("\"" + key + "\"");
      if (at < 0) {
        return null;
      }
      int i = json.indexOf(':', at + key.length() + 2) + 1;
      while (json.charAt(i) == ' ') {
        i++;
      }
      if (json.charAt(i) == '"') {
        return json.substring(i + 1, json.indexOf('"', i + 1));
      }
      int end = i;
      while (end < json.length() && (Character.isDigit(json.charAt(end)) || json.charAt(end) == '-')) {
        end++;
      }
      return json.substring(i, end);
    }

    /** Sequence numbers missing between the first and the last one seen, and ones seen twice. */
    int[] lostAndDuplicated(int expectedLast) {
      List<Integer> seen;
      synchronized (seqs) {
        seen = new ArrayList<>(seqs);
      }
      int duplicated = 0;
      boolean[] got = new boolean[Math.max(expectedLast, seen.stream().mapToInt(i -> i).max().orElse(0)) + 1];
      for (int seq : seen) {
        if (got[seq]) {
          duplicated++;
        }
        got[seq] = true;
      }
      int lost = 0;
      for (int seq = 1; seq <= expectedLast; seq++) {
        if (!got[seq]) {
          lost++;
        }
      }
      return new int[] {lost, duplicated};
    }
  }

  /** Opens an SSE stream (GET, or the POST that creates the submission when {@code createBody} is given). */
  public Future<Stream> open(String submissionId, JsonObject createBody) {
    Stream stream = new Stream(submissionId);
    RequestOptions options = new RequestOptions()
        .setMethod(createBody == null ? HttpMethod.GET : HttpMethod.POST)
        .setURI(createBody == null ? "/api/submissions/" + submissionId + "/events" : "/api/submissions")
        .putHeader("Authorization", "Bearer " + token).putHeader("Accept", "text/event-stream")
        .setIdleTimeout(0);
    if (createBody != null) {
      options.putHeader("Content-Type", "application/json");
    }
    return http.request(options).compose(request -> {
      stream.connection = request.connection();
      return createBody == null ? request.send() : request.send(createBody.encode());
    }).map(response -> {
      response.handler(stream::feed);
      response.endHandler(v -> stream.ended.tryComplete());
      response.exceptionHandler(e -> stream.ended.tryComplete());
      stream.opened.tryComplete();
      return stream;
    });
  }

  /**
   * Creates {@code submissions} runs that wait (agent {@code hang}), opens {@code streams} streams over them,
   * waits until every stream has had its replay and {@code heartbeatWaits} heartbeats; returns the ids (still
   * running) and the figures. {@code heapBytes} reads the service's heap after a GC.
   */
  public Figures holdStreams(int submissions, int streams, int heartbeatWaits, Duration heartbeat,
                             Supplier<Long> heapBytes, List<String> idsOut) throws Exception {
    List<String> ids = new ArrayList<>();
    for (int i = 0; i < submissions; i++) {
      JsonObject created = await(post("/api/submissions", submission("// load: hang")));
      ids.add(created.getString("id"));
    }
    idsOut.addAll(ids);
    long started = System.nanoTime();
    List<Stream> open = new ArrayList<>();
    List<Future<Stream>> opening = new ArrayList<>();
    for (int i = 0; i < streams; i++) {
      opening.add(open(ids.get(i % ids.size()), null));
      if (opening.size() == 500) {
        for (Future<Stream> f : opening) {
          open.add(await(f));
        }
        opening.clear();
      }
    }
    for (Future<Stream> f : opening) {
      open.add(await(f));
    }
    double openSeconds = (System.nanoTime() - started) / 1e9;
    // Every stream has replayed IN_QUEUE, PROVISIONING, COMPILING (seq 1..3) and then heartbeats.
    long deadline = System.nanoTime() + heartbeat.multipliedBy(heartbeatWaits + 4).toNanos() + 60_000_000_000L;
    while (System.nanoTime() < deadline && open.stream().anyMatch(st -> st.seqs.size() < 3
        || st.heartbeats.get() < heartbeatWaits)) {
      Thread.sleep(200);
    }
    long short3 = open.stream().filter(st -> st.seqs.size() < 3).count();
    long noBeat = open.stream().filter(st -> st.heartbeats.get() < heartbeatWaits).count();
    long ended = open.stream().filter(st -> st.ended.future().isComplete()).count();
    int lost = 0;
    int duplicated = 0;
    for (Stream st : open) {
      int[] ld = st.lostAndDuplicated(3);
      lost += ld[0];
      duplicated += ld[1];
    }
    long heap = heapBytes.get();
    for (Stream st : open) {
      st.connection.close();
    }
    return new Figures("streams", new JsonObject().put("streams", streams).put("submissions", submissions)
        .put("open_seconds", openSeconds).put("without_replay", short3).put("without_heartbeat", noBeat)
        .put("ended_early", ended).put("heap_bytes_after_gc", heap).put("lost", lost).put("duplicated", duplicated));
  }

  /**
   * {@code submissions} created as streams (so every event is received live), {@code spacing} apart, each
   * running the load agent with {@code code}; latency = receipt - the agent's sent_ns, per event.
   */
  public Figures latency(int submissions, Duration spacing, String code, int expectedFrames) throws Exception {
    List<Future<Stream>> opening = new ArrayList<>();
    long started = System.nanoTime();
    for (int i = 0; i < submissions; i++) {
      opening.add(open(null, submission(code)));
      if (!spacing.isZero()) {
        Thread.sleep(spacing.toMillis());
      }
    }
    List<Stream> streams = new ArrayList<>();
    for (Future<Stream> f : opening) {
      streams.add(await(f));
    }
    // One deadline for all: a stream that never ends is counted (and its submission looked at), not waited on.
    long deadline = System.nanoTime() + Duration.ofMinutes(3).toNanos();
    int notEnded = 0;
    for (Stream st : streams) {
      try {
        await(st.ended.future(), Duration.ofNanos(Math.max(1, deadline - System.nanoTime())));
      } catch (java.util.concurrent.TimeoutException e) {
        notEnded++;
        System.out.println("stream of " + st.submissionId + " did not end; it saw seqs " + st.seqs);
      }
    }
    double seconds = (System.nanoTime() - started) / 1e9;
    List<Long> all = new ArrayList<>();
    List<Long> toStored = new ArrayList<>();
    List<Long> toClient = new ArrayList<>();
    int lost = 0;
    int duplicated = 0;
    long notBenchmarked = 0;
    for (Stream st : streams) {
      all.addAll(st.latenciesNs);
      toStored.addAll(st.toStoredNs);
      toClient.addAll(st.toClientNs);
      int[] ld = st.lostAndDuplicated(expectedFrames);
      lost += ld[0];
      duplicated += ld[1];
      if (!"BENCHMARKED".equals(st.terminal)) {
        notBenchmarked++;
      }
    }
    printTimeline(streams);
    return new Figures("latency", new JsonObject().put("submissions", submissions).put("events", all.size())
        .put("seconds", seconds).put("events_per_second", all.size() / seconds)
        .put("p50_ms", percentile(all, 50)).put("p99_ms", percentile(all, 99)).put("max_ms", percentile(all, 100))
        .put("to_stored_p50_ms", percentile(toStored, 50)).put("to_stored_p99_ms", percentile(toStored, 99))
        .put("to_client_p50_ms", percentile(toClient, 50)).put("to_client_p99_ms", percentile(toClient, 99))
        .put("lost", lost).put("duplicated", duplicated).put("not_benchmarked", notBenchmarked)
        .put("not_ended", notEnded));
  }

  /** Latency by half second of the phase (when the agent printed): shows whether it grows with the load. */
  private static void printTimeline(List<Stream> streams) {
    java.util.TreeMap<Long, List<Long>> buckets = new java.util.TreeMap<>();
    long first = Long.MAX_VALUE;
    for (Stream st : streams) {
      synchronized (st.sentNs) {
        for (long sent : st.sentNs) {
          first = Math.min(first, sent);
        }
      }
    }
    for (Stream st : streams) {
      for (int i = 0; i < st.sentNs.size(); i++) {
        long bucket = (st.sentNs.get(i) - first) / 500_000_000L;
        buckets.computeIfAbsent(bucket, k -> new ArrayList<>()).add(st.latenciesNs.get(i));
      }
    }
    StringBuilder line = new StringBuilder("latency timeline (t s: events, p50 ms, p99 ms):");
    buckets.forEach((bucket, values) -> line.append(String.format(java.util.Locale.ROOT, " [%.1f: %d, %.1f, %.1f]",
        bucket / 2.0, values.size(), percentile(values, 50), percentile(values, 99))));
    System.out.println(line);
  }

  /** Cancels each of {@code ids} ({@code concurrency} at a time): request -> 202 (process gone, CANCELLED stored). */
  public Figures cancel(List<String> ids, int concurrency) throws Exception {
    ConcurrentLinkedQueue<Long> latencies = new ConcurrentLinkedQueue<>();
    AtomicInteger next = new AtomicInteger();
    AtomicInteger notCancelled = new AtomicInteger();
    List<Future<?>> workers = new ArrayList<>();
    for (int w = 0; w < concurrency; w++) {
      workers.add(chain(() -> {
        int i = next.getAndIncrement();
        if (i >= ids.size()) {
          return null;
        }
        long t0 = System.nanoTime();
        return post("/api/submissions/" + ids.get(i) + "/cancel", null).map(reply -> {
          latencies.add(System.nanoTime() - t0);
          if (reply.getInteger("_status") != 202 || !"CANCELLED".equals(reply.getString("status"))) {
            notCancelled.incrementAndGet();
          }
          return null;
        });
      }));
    }
    await(Future.all(workers));
    return new Figures("cancel", new JsonObject().put("cancels", ids.size()).put("not_cancelled", notCancelled.get())
        .put("p50_ms", percentile(latencies, 50)).put("p99_ms", percentile(latencies, 99))
        .put("max_ms", percentile(latencies, 100)));
  }

  // ---- helpers

  /** The GPU type the load goes to: the local backend's, or (-Dworkers=N) the one served by workers. */
  private final String gpuType = System.getProperty("loadGpuType", "local");

  public JsonObject submission(String code) {
    return new JsonObject().put("problem", "leaky-relu").put("language", "cuda").put("gpu_type", gpuType)
        .put("dtype", "float32").put("code", code);
  }

  public Future<JsonObject> post(String path, JsonObject body) {
    return post(path, body, token);
  }

  public Future<JsonObject> post(String path, JsonObject body, String as) {
    return http.request(new RequestOptions().setMethod(HttpMethod.POST).setURI(path)
            .putHeader("Authorization", "Bearer " + as).putHeader("Content-Type", "application/json"))
        .compose(request -> request.send(body == null ? "" : body.encode()))
        .compose(response -> response.body().map(buffer -> {
          JsonObject json = buffer.length() == 0 ? new JsonObject() : new JsonObject(buffer);
          return json.put("_status", response.statusCode());
        }));
  }

  public Future<String> get(String path) {
    return http.request(new RequestOptions().setMethod(HttpMethod.GET).setURI(path)
            .putHeader("Authorization", "Bearer " + token))
        .compose(request -> request.send().compose(response -> response.body().map(Buffer::toString)));
  }

  /** Runs {@code step} again and again, one at a time, until it returns null. */
  static Future<Void> chain(Supplier<Future<?>> step) {
    Future<?> next = step.get();
    if (next == null) {
      return Future.succeededFuture();
    }
    return next.transform(ar -> chain(step));
  }

  public static double percentile(java.util.Collection<Long> nanos, double p) {
    List<Long> sorted = new ArrayList<>(nanos);
    if (sorted.isEmpty()) {
      return Double.NaN;
    }
    Collections.sort(sorted);
    int index = (int) Math.ceil(p / 100.0 * sorted.size()) - 1;
    return sorted.get(Math.max(0, Math.min(sorted.size() - 1, index))) / 1e6;
  }

  public static <T> T await(Future<T> future) throws Exception {
    return future.toCompletionStage().toCompletableFuture().get(10, TimeUnit.MINUTES);
  }

  public static <T> T await(Future<T> future, Duration timeout) throws Exception {
    return future.toCompletionStage().toCompletableFuture().get(timeout.toMillis(), TimeUnit.MILLISECONDS);
  }

  @Override
  public void close() throws Exception {
    await(http.close());
  }
}
