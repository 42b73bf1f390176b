package dev.kernelrunner.load;

import dev.kernelrunner.Main;
import dev.kernelrunner.load.LoadRun.Figures;
import dev.kernelrunner.store.EmbeddedPostgres;
import io.vertx.core.Vertx;
import io.vertx.core.VertxOptions;
import io.vertx.core.json.JsonObject;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.LocalDate;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;

/**
 * The load benchmark (issue 7): starts PostgreSQL and the service as a separate JVM (-Xmx1g, the local backend
 * with the fast load agent), then measures with its own clients and prints the figures against their targets.
 * Run: {@code mvn -q -B test-compile exec:java -Dexec.classpathScope=test
 * -Dexec.mainClass=dev.kernelrunner.load.LoadBenchmark} (sizes as -D properties, {@code -Dwrite=true} to
 * append the table to docs/benchmarks.md). With {@code -Dworkers=N -DslotsPerWorker=K} the agents run under N
 * worker processes ({@code python3 -m remote_agent worker --gpus 0..K-1 --job-command <load agent>}) that pull
 * their jobs over the worker API, instead of as the service's children (phases latency and cancel); with
 * {@code -DreplayWorkers=true} the workers are played by this program ({@link ReplayWorkers}) instead.
 */
public final class LoadBenchmark {
  private LoadBenchmark() {}

  public static void main(String[] args) throws Exception {
    int streams = Integer.getInteger("streams", 10_000);
    int streamSubmissions = Integer.getInteger("streamSubmissions", 100);
    int latencySubmissions = Integer.getInteger("latencySubmissions", 200);
    int events = Integer.getInteger("events", 50);
    int intervalMs = Integer.getInteger("intervalMs", 40);
    int acceptCount = Integer.getInteger("accept", 2000);
    int insertRows = Integer.getInteger("inserts", 5000);
    boolean write = Boolean.getBoolean("write");
    int workers = Integer.getInteger("workers", 0);
    int slotsPerWorker = Integer.getInteger("slotsPerWorker", 4);
    int slots = workers > 0 ? workers * slotsPerWorker : Math.max(latencySubmissions, streamSubmissions);
    // Under target/: PostgreSQL (run as the postgres user when we are root) must be able to enter it.
    Path work = Files.createDirectories(Path.of("target/load")).toAbsolutePath();
    work = Files.createTempDirectory(work, "run");
    work.toFile().setExecutable(true, false);
    work.toFile().setReadable(true, false); // the agents' folder: as root they run as an unprivileged user
    EmbeddedPostgres postgres = EmbeddedPostgres.start(work.resolve("pg"));
    String databaseUrl = postgres.createDatabase("kr_load");
    int port = dev.kernelrunner.support.Ports.free();
    String agentCommand = agentCommand(work);
    List<String> argv = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
        "-Xmx1g"));
    // e.g. -DserviceJvmArgs=-XX:StartFlightRecording=filename=target/load/service.jfr,settings=profile
    String extra = System.getProperty("serviceJvmArgs", "");
    if (!extra.isBlank()) {
      argv.addAll(List.of(extra.trim().split("\\s+")));
    }
    argv.addAll(List.of("-cp", classpath(), Main.class.getName()));
    ProcessBuilder builder = new ProcessBuilder(argv).redirectErrorStream(true);
    builder.environment().putAll(java.util.Map.of("DATABASE_URL", databaseUrl, "HTTP_PORT", String.valueOf(port),
        "HTTP_HOST", "127.0.0.1", "ADMIN_TOKEN", "load-admin", "DATA_DIR", work.resolve("data").toString(),
        "AGENT_COMMAND", agentCommand, "AGENT_WORKDIR", work.toString(),
        "LOCAL_MAX_CONCURRENT", String.valueOf(slots),
        "MAX_ACTIVE_PER_USER", "100000", "SSE_HEARTBEAT_SECONDS", "5"));
    builder.environment().put("DISCONNECT_GRACE_SECONDS", "600");
    // A benchmark floods on purpose (its warm-ups are thousands of one user's submissions): no hourly or daily
    // quota; -DquotaChecks=true sets limits it never reaches, so that every create still counts (their cost).
    boolean quotaChecks = Boolean.getBoolean("quotaChecks");
    builder.environment().put("QUOTA_SUBMISSIONS_PER_HOUR", quotaChecks ? "10000000" : "0");
    builder.environment().put("QUOTA_GPU_SECONDS_PER_DAY", quotaChecks ? "1000000000" : "0");
    // Every client of the benchmark is one address, a few users: the caps meant for strangers go up.
    builder.environment().put("HTTP_MAX_CONNECTIONS", "100000");
    builder.environment().put("HTTP_MAX_CONNECTIONS_PER_ADDRESS", "100000");
    builder.environment().put("SSE_MAX_STREAMS_PER_USER", "100000");
    builder.environment().put("LOG_LEVEL", "WARN");
    builder.environment().remove("DSTACK_SERVER_URL");
    // Without -Dworkers, the local backend as a child process per submission (its figures in docs/benchmarks.md).
    builder.environment().put("LOCAL_WORKERS", "false");
    if (workers > 0) {
      builder.environment().put("LOCAL_GPU_TYPES", "");
      builder.environment().put("WORKER_GPU_TYPES", "load-gpu");
      System.setProperty("loadGpuType", "load-gpu");
    }
    Process service = builder.start();
    BufferedReader out = new BufferedReader(new InputStreamReader(service.getInputStream(), StandardCharsets.UTF_8));
    String line;
    while ((line = out.readLine()) != null && !line.contains("listening")) {
      System.out.println("[service] " + line);
    }
    if (line == null) {
      postgres.close();
      throw new IllegalStateException("the service did not start (its output is above)");
    }
    Thread echo = new Thread(() -> {
      try {
        out.lines().forEach(l -> System.out.println("[service] " + l));
      } catch (java.io.UncheckedIOException e) {
        // the service is gone
      }
    });
    echo.setDaemon(true);
    echo.start();
    long pid = service.pid();
    boolean replay = Boolean.getBoolean("replayWorkers");
    List<Process> workerProcesses = workers > 0 && !replay
        ? startWorkers(port, workers, slotsPerWorker, agentCommand, work) : List.of();
    Vertx vertx = Vertx.vertx(new VertxOptions().setEventLoopPoolSize(2));
    if (workers > 0 && replay) {
      LoadRun.await(new ReplayWorkers(vertx, "127.0.0.1", port, workerToken(port))
          .start(workers, slotsPerWorker, "load-gpu"));
      awaitCapacity(port, workers * slotsPerWorker);
    }
    List<Figures> figures = new ArrayList<>();
    // -Dphases=latency,accept (for tuning one thing) runs only those; the table is made only for a full run.
    List<String> phases = List.of(System.getProperty("phases", "latency,streams,cancel,accept").split(","));
    try (LoadRun run = new LoadRun(vertx, "127.0.0.1", port, "load-admin", streams + 1000)) {
      // Warm-up (discarded): the same work as the latency phase, so that the JIT has compiled the event path;
      // a cold JVM measured 2x slower on it.
      // Three rounds: the JIT compiler (one C2 thread on two cores) was still compiling the event path during
      // the measured phase after one.
      for (int round = 1; round <= Integer.getInteger("warmups", 3); round++) {
        System.out.println("phase: warm-up " + round);
        run.latency(latencySubmissions, Duration.ofMillis(5), "// load: events=" + events + " interval_ms="
            + intervalMs, events + 2);
        waitIdle(run);
      }
      // The per-submission paths (create, start, end) run 200 times a round, against 10,000 for the per-event
      // ones: without more rounds of short submissions they are still interpreted or half-compiled when the
      // measured phase begins, unlike in a service that has been up for a while.
      int shortRounds = Integer.getInteger("shortWarmups", 10);
      for (int round = 1; round <= shortRounds; round++) {
        System.out.println("phase: warm-up (short submissions) " + round);
        run.latency(latencySubmissions, Duration.ZERO, "// load: events=5 interval_ms=1", 7);
        waitIdle(run);
      }
      run.users(Integer.getInteger("users", 100));
      if (phases.contains("latency")) {
        System.out.println("phase: latency");
        long[] before = cpuTicks(pid);
        figures.add(run.latency(latencySubmissions, Duration.ofMillis(5),
            "// load: events=" + events + " interval_ms=" + intervalMs, events + 2));
        long[] after = cpuTicks(pid);
        System.out.printf(Locale.ROOT, "latency phase CPU: service %.2f s, whole machine %.2f s busy of %.2f s%n",
            (after[0] - before[0]) / 100.0, (after[1] - before[1]) / 100.0, (after[2] - before[2]) / 100.0);
        waitIdle(run);
      }
      List<String> waiting = new ArrayList<>();
      if (workers > 0 && phases.contains("cancel")) {
        // Runs to cancel: every worker slot holds one that waits to be stopped.
        for (int i = 0; i < slots; i++) {
          waiting.add(LoadRun.await(run.post("/api/submissions", run.submission("// load: hang"))).getString("id"));
        }
        waitRunning(run, slots);
      }
      if (phases.contains("streams")) {
        figures.add(run.holdStreams(streamSubmissions, streams, 2, Duration.ofSeconds(5), () -> heapAfterGc(pid),
            waiting));
        waitStreamsClosed(run);
      }
      if (phases.contains("cancel")) {
        figures.add(run.cancel(waiting, Integer.getInteger("cancelConcurrency", 10)));
        waitIdle(run);
      }
      if (phases.contains("accept")) {
        // Acceptance as the issue defines it (validated, stored, IN_QUEUE sent) at a deadline: every GPU slot
        // is taken, so the new submissions wait in the queue rather than start. The plain-INSERT baseline is
        // measured just before, in the same conditions (same database, same agents holding the slots).
        for (int i = 0; i < slots; i++) {
          LoadRun.await(run.post("/api/submissions", run.submission("// load: hang")));
        }
        // Both sides warmed first (discarded): the generator's own HTTP and SQL clients are JIT-compiled too,
        // and it shares the two cores with the service and the database.
        run.insertBaseline(databaseUrl, insertRows, 8);
        run.accept(acceptCount / 2, 32, "// load: events=5 interval_ms=1");
        System.out.println("phase: insert baseline");
        figures.add(0, run.insertBaseline(databaseUrl, insertRows, 8));
        System.out.println("phase: acceptance");
        figures.add(run.accept(acceptCount, 32, "// load: events=5 interval_ms=1"));
      }
    } finally {
      workerProcesses.forEach(Process::destroy);
      service.destroy();
      service.waitFor(60, TimeUnit.SECONDS);
      vertx.close().toCompletionStage().toCompletableFuture().get(30, TimeUnit.SECONDS);
      postgres.close();
    }
    if (phases.size() < 4) {
      figures.forEach(f -> System.out.println(f.phase() + ": " + f.values().encode()));
      return;
    }
    String table = table(figures, streams, latencySubmissions, events);
    System.out.println(table);
    figures.forEach(f -> System.out.println(f.phase() + ": " + f.values().encode()));
    if (write) {
      Path docs = Path.of("docs/benchmarks.md");
      Files.writeString(docs, Files.readString(docs) + "\n" + table + "\nRaw figures:\n\n```\n"
          + String.join("\n", figures.stream().map(f -> f.phase() + ": " + f.values().encode()).toList())
          + "\n```\n");
      System.out.println("appended to " + docs);
    }
  }

  /** The C load agent, compiled here (Python's start-up would dominate); the Python one without a compiler. */
  private static String agentCommand(Path work) throws Exception {
    Path source = Path.of("src/test/resources/agents/load_agent.c").toAbsolutePath();
    Path binary = work.resolve("load_agent");
    try {
      Process cc = new ProcessBuilder("cc", "-O2", "-o", binary.toString(), source.toString()).inheritIO().start();
      if (cc.waitFor() == 0) {
        binary.toFile().setExecutable(true, false);
        return binary.toString();
      }
    } catch (java.io.IOException e) {
      // no C compiler
    }
    System.out.println("no C compiler: using the Python load agent (its ~100 ms start-up weighs on the figures)");
    return "python3 " + Path.of("src/test/resources/agents/load_agent.py").toAbsolutePath();
  }

  /** This program's classpath (under exec:java it is a class loader's, not java.class.path). */
  private static String classpath() {
    if (LoadBenchmark.class.getClassLoader() instanceof java.net.URLClassLoader loader) {
      List<String> entries = new ArrayList<>();
      for (java.net.URL url : loader.getURLs()) {
        try {
          entries.add(Path.of(url.toURI()).toString());
        } catch (java.net.URISyntaxException e) {
          throw new IllegalStateException(e);
        }
      }
      return String.join(java.io.File.pathSeparator, entries);
    }
    return System.getProperty("java.class.path");
  }

  /** Until the service has seen the 10,000 streams go (cancel latency is measured on its own, not in that storm). */
  private static void waitStreamsClosed(LoadRun run) throws Exception {
    long deadline = System.nanoTime() + Duration.ofMinutes(2).toNanos();
    while (System.nanoTime() < deadline) {
      String metrics = LoadRun.await(run.get("/metrics"));
      var m = java.util.regex.Pattern.compile("(?m)^kernel_runner_sse_streams_open (\\S+)").matcher(metrics);
      if (m.find() && Double.parseDouble(m.group(1)) == 0) {
        Thread.sleep(1000);
        return;
      }
      Thread.sleep(200);
    }
  }

  /** Until nothing runs or waits (the acceptance phase's submissions), so that the next phase starts clean. */
  /**
   * {@code count} worker processes of {@code slots} slots each, the load agent as their job command, with a worker
   * token made through the admin API; answers once the service counts all their slots.
   */
  private static List<Process> startWorkers(int port, int count, int slots, String agentCommand, Path work)
      throws Exception {
    String token = workerToken(port);
    String gpus = String.join(",", java.util.stream.IntStream.range(0, slots).mapToObj(String::valueOf).toList());
    List<Process> processes = new ArrayList<>();
    for (int i = 0; i < count; i++) {
      ProcessBuilder builder = new ProcessBuilder("python3", "-m", "remote_agent", "worker", "--server",
          "http://127.0.0.1:" + port, "--gpu-type", "load-gpu", "--gpus", gpus, "--host", "load-" + i,
          "--job-command", agentCommand)
          .directory(Path.of("remote-agent").toFile()).redirectErrorStream(true)
          .redirectOutput(work.resolve("worker-" + i + ".log").toFile());
      builder.environment().put("KERNEL_RUNNER_WORKER_TOKEN", token);
      processes.add(builder.start());
    }
    awaitCapacity(port, count * slots);
    return processes;
  }

  /** A worker token, made through the admin API. */
  private static String workerToken(int port) throws Exception {
    String created = java.net.http.HttpClient.newHttpClient().send(java.net.http.HttpRequest.newBuilder(
            java.net.URI.create("http://127.0.0.1:" + port + "/api/admin/tokens"))
        .header("Authorization", "Bearer load-admin").header("Content-Type", "application/json")
        .POST(java.net.http.HttpRequest.BodyPublishers.ofString("{\"role\":\"worker\",\"user_id\":\"load\"}"))
        .build(), java.net.http.HttpResponse.BodyHandlers.ofString()).body();
    return new JsonObject(created).getString("token");
  }

  /** Answers once the service counts {@code slots} connected worker slots. */
  private static void awaitCapacity(int port, int slots) throws Exception {
    java.net.http.HttpClient http = java.net.http.HttpClient.newHttpClient();
    long deadline = System.nanoTime() + Duration.ofMinutes(2).toNanos();
    while (true) {
      String types = http.send(java.net.http.HttpRequest.newBuilder(
              java.net.URI.create("http://127.0.0.1:" + port + "/api/gpu-types"))
          .header("Authorization", "Bearer load-admin").build(),
          java.net.http.HttpResponse.BodyHandlers.ofString()).body();
      int capacity = new JsonObject(types).getJsonArray("gpu_types").getJsonObject(0).getInteger("capacity");
      if (capacity == slots) {
        System.out.println("workers: " + slots + " slots connected");
        return;
      }
      if (System.nanoTime() > deadline) {
        throw new IllegalStateException("only " + capacity + " worker slots connected");
      }
      Thread.sleep(200);
    }
  }

  private static void waitRunning(LoadRun run, int count) throws Exception {
    long deadline = System.nanoTime() + Duration.ofMinutes(2).toNanos();
    while (System.nanoTime() < deadline) {
      JsonObject type = new JsonObject(LoadRun.await(run.get("/api/gpu-types"))).getJsonArray("gpu_types")
          .getJsonObject(0);
      if (type.getInteger("running") >= count) {
        Thread.sleep(2000); // their agents have started and said COMPILING
        return;
      }
      Thread.sleep(200);
    }
  }

  private static void waitIdle(LoadRun run) throws Exception {
    long deadline = System.nanoTime() + Duration.ofMinutes(10).toNanos();
    while (System.nanoTime() < deadline) {
      JsonObject types = new JsonObject(LoadRun.await(run.get("/api/gpu-types")));
      JsonObject local = types.getJsonArray("gpu_types").getJsonObject(0);
      if (local.getInteger("running") == 0 && local.getInteger("queued") == 0) {
        return;
      }
      Thread.sleep(500);
    }
  }

  /** Clock ticks (1/100 s): the service process's CPU, the machine's busy time, the machine's total time. */
  private static long[] cpuTicks(long pid) {
    try {
      String stat = Files.readString(Path.of("/proc/" + pid + "/stat"));
      String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
      long service = Long.parseLong(f[11]) + Long.parseLong(f[12]);
      String[] cpu = Files.readAllLines(Path.of("/proc/stat")).get(0).trim().split("\\s+");
      long total = 0;
      for (int i = 1; i < cpu.length; i++) {
        total += Long.parseLong(cpu[i]);
      }
      long idle = Long.parseLong(cpu[4]) + Long.parseLong(cpu[5]);
      return new long[] {service, total - idle, total};
    } catch (java.io.IOException | RuntimeException e) {
      return new long[3];
    }
  }

  /** The service's heap in use right after a full GC (jcmd), in bytes. */
  private static long heapAfterGc(long pid) {
    try {
      String jcmd = Path.of(System.getProperty("java.home"), "bin", "jcmd").toString();
      new ProcessBuilder(jcmd, String.valueOf(pid), "GC.run").redirectErrorStream(true).start().waitFor();
      Process info = new ProcessBuilder(jcmd, String.valueOf(pid), "GC.heap_info").redirectErrorStream(true).start();
      String text = new String(info.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      info.waitFor();
      var m = java.util.regex.Pattern.compile("used (\\d+)K").matcher(text);
      return m.find() ? Long.parseLong(m.group(1)) * 1024 : -1;
    } catch (Exception e) {
      return -1;
    }
  }

  private static String table(List<Figures> figures, int streams, int latencySubmissions, int events) {
    JsonObject insert = find(figures, "insert baseline");
    JsonObject accept = find(figures, "acceptance");
    JsonObject latency = find(figures, "latency");
    JsonObject held = find(figures, "streams");
    JsonObject cancel = find(figures, "cancel");
    double ratio = accept.getDouble("per_second") / insert.getDouble("per_second");
    long lost = latency.getLong("lost") + held.getLong("lost");
    long duplicated = latency.getLong("duplicated") + held.getLong("duplicated");
    String machine = Runtime.getRuntime().availableProcessors() + " cores, "
        + Math.round(totalMemoryGiB()) + " GiB, " + System.getProperty("os.name") + ", Java "
        + System.getProperty("java.version");
    StringBuilder t = new StringBuilder();
    t.append("### Load benchmark, ").append(LocalDate.now()).append(" (").append(machine).append(")\n\n");
    t.append("PostgreSQL on the same machine, the service in its own JVM with -Xmx1g, the local backend with the\n")
        .append("load agent (src/test/resources/agents/load_agent.c), the load generator in a third JVM.\n\n");
    t.append("| figure | target | measured | met |\n| --- | --- | --- | --- |\n");
    row(t, "open SSE streams, each getting heartbeats", "10,000, heap <= 1 GiB",
        String.format(Locale.ROOT, "%d streams, %d without a heartbeat, heap after GC %.0f MiB", held.getInteger("streams"),
            held.getLong("without_heartbeat"), held.getLong("heap_bytes_after_gc") / 1048576.0),
        held.getInteger("streams") >= 10_000 && held.getLong("without_heartbeat") == 0
            && held.getLong("heap_bytes_after_gc") > 0 && held.getLong("heap_bytes_after_gc") <= 1L << 30);
    row(t, "event latency, agent line -> SSE client", "p50 <= 5 ms, p99 <= 50 ms (200 running, 50 events each)",
        String.format(Locale.ROOT, "p50 %.2f ms, p99 %.2f ms, max %.1f ms (%d running, %d events each, %d events)",
            latency.getDouble("p50_ms"), latency.getDouble("p99_ms"), latency.getDouble("max_ms"), latencySubmissions,
            events, latency.getInteger("events")),
        latency.getDouble("p50_ms") <= 5 && latency.getDouble("p99_ms") <= 50 && latencySubmissions >= 200);
    row(t, "submissions accepted vs plain INSERTs", ">= 50%",
        String.format(Locale.ROOT, "%.0f/s vs %.0f/s = %.0f%%", accept.getDouble("per_second"),
            insert.getDouble("per_second"), 100 * ratio), ratio >= 0.5);
    row(t, "cancel, request -> process gone and CANCELLED stored", "p99 <= 500 ms",
        String.format(Locale.ROOT, "p50 %.0f ms, p99 %.0f ms over %d", cancel.getDouble("p50_ms"),
            cancel.getDouble("p99_ms"), cancel.getInteger("cancels")), cancel.getDouble("p99_ms") <= 500
            && cancel.getInteger("not_cancelled") == 0);
    long notEnded = latency.getLong("not_ended", 0L);
    row(t, "events lost or duplicated", "0", lost + " lost, " + duplicated + " duplicated"
        + (notEnded > 0 ? ", " + notEnded + " streams never ended" : ""), lost == 0 && duplicated == 0 && notEnded == 0);
    return t.toString();
  }

  private static void row(StringBuilder t, String figure, String target, String measured, boolean met) {
    t.append("| ").append(figure).append(" | ").append(target).append(" | ").append(measured).append(" | ")
        .append(met ? "yes" : "**no**").append(" |\n");
  }

  private static JsonObject find(List<Figures> figures, String phase) {
    return figures.stream().filter(f -> f.phase().equals(phase)).findFirst().orElseThrow().values();
  }

  private static double totalMemoryGiB() {
    try {
      String meminfo = Files.readString(Path.of("/proc/meminfo"));
      var m = java.util.regex.Pattern.compile("MemTotal:\\s+(\\d+) kB").matcher(meminfo);
      return m.find() ? Long.parseLong(m.group(1)) / 1048576.0 : 0;
    } catch (Exception e) {
      return 0;
    }
  }
}
