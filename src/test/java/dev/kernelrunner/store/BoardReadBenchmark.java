package dev.kernelrunner.store;

import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import org.flywaydb.core.Flyway;

/**
 * How long a board's read takes as the board grows. The supervisor reads a benchmark's board as it dispatches it
 * (the #1's interval goes into the payload), and every board page reads one. PostgreSQL is started here with the
 * service's migrations; the board gets SIZES ranked results of 200 users, each with five tests and their samples as
 * the agent publishes them; then {@link LeaderboardSql#BOARD} (its top 20) is read REPEATS times after three
 * warm-ups, and so is the same statement with the rule of what ranks taken from each row's JSON (its ACCEPTED as
 * before V15__ranked_results.sql). Prints each median. Run: {@code mvn -q -B test-compile exec:java
 * -Dexec.classpathScope=test -Dexec.mainClass=dev.kernelrunner.store.BoardReadBenchmark} ({@code -Dsizes=1000,10000}).
 */
public final class BoardReadBenchmark {
  private static final int REPEATS = 9;
  private static final int USERS = 200;
  /** The rule read from the JSON, as LeaderboardSql.ACCEPTED was before V15 (the baseline of this benchmark). */
  private static final String ACCEPTED_FROM_JSON = """
      SELECT id, user_id, problem, gpu_type, dtype, created_at,
             (result->>'geomean_runtime_ms')::float8 AS geomean_ms
        FROM submissions
       WHERE status = 'BENCHMARKED' AND mode = 'benchmark' AND invalidated_at IS NULL
         AND ($1::text IS NULL OR problem = $1) AND ($2::text IS NULL OR gpu_type = $2)
         AND ($3::text IS NULL OR dtype = $3)
         AND result #>> '{verification,judge}' = 'passed'
         AND result #>> '{verification,timing,method}' = 'replayed'
         AND result #>> '{verification,timing,status}' = 'verified'
         AND result #>> '{isolation,full}' = 'true'
         AND COALESCE(result #>> '{runner,trusted}', 'true') = 'true'
         AND COALESCE((result->>'needs_review')::boolean, false) = false
         AND COALESCE((result->>'unverified')::boolean, false) = false
         AND jsonb_typeof(result->'geomean_runtime_ms') = 'number'""";
  /** Ranked results {@code ? .. ?} of leaky-relu on H100 in float32, of USERS users, as the agent publishes them. */
  private static final String SEED = """
      INSERT INTO submissions (id, user_id, problem, language, gpu_type, dtype, mode, code, status, result,
                               created_at)
      SELECT md5('s' || i)::uuid, 'user' || (i % ?), 'leaky-relu', 'cuda', 'H100', 'float32', 'benchmark',
             repeat('x', 1500), 'BENCHMARKED',
             jsonb_build_object(
               'geomean_runtime_ms', 0.01 + random() * 0.005, 'geomean_speedup', 1 + random(),
               'verification', jsonb_build_object('judge', 'passed', 'tests', 5, 'timing',
                  jsonb_build_object('method', 'replayed', 'status', 'verified', 'empty_window_ms', 0.0012)),
               'isolation', jsonb_build_object('full', true, 'user', 'job', 'uid', 2000000001, 'seccomp', true,
                  'namespaces', '["pid","ipc","net","uts","mount"]'::jsonb, 'landlock_abi', 7),
               'runner', jsonb_build_object('trusted', true, 'worker', 'w'),
               'test_results', (SELECT jsonb_agg(jsonb_build_object('test_id', t, 'name', 'test ' || t,
                    'status', 'PASSED', 'runtime_ms', random(), 'runtime_stats', jsonb_build_object(
                      'median', random(), 'mean', random(), 'min', random(), 'max', random(), 'stddev', random(),
                      'ci95', '[0.1, 0.2]'::jsonb, 'n', 30),
                    'method', repeat('m', 400), 'sm_clock_mhz', '{"min": 1980, "max": 1980}'::jsonb))
                  FROM generate_series(1, 5) t)),
             now() - (i || ' seconds')::interval
        FROM generate_series(?, ?) i""";
  private static final String SEED_EVENTS = """
      INSERT INTO submission_events (submission_id, seq, type, payload, created_at)
      SELECT md5('s' || i)::uuid, 10 + t, 'BENCHMARK_RESULT',
             jsonb_build_object('result', jsonb_build_object('test_id', t, 'runtime_stats', jsonb_build_object(
               'samples', (SELECT jsonb_agg(random()) FROM generate_series(1, 30 + t * 0))))), now()
        FROM generate_series(?, ?) i, generate_series(1, 5) t""";

  private BoardReadBenchmark() {}

  public static void main(String[] args) throws Exception {
    int[] sizes = Arrays.stream(System.getProperty("sizes", "1000,10000,100000").split(","))
        .mapToInt(s -> Integer.parseInt(s.trim())).sorted().toArray();
    // Under target/: PostgreSQL (run as the postgres user when we are root) must be able to enter it.
    Path work = Files.createTempDirectory(Files.createDirectories(Path.of("target/load")).toAbsolutePath(), "board");
    work.toFile().setExecutable(true, false);
    work.toFile().setReadable(true, false);
    try (EmbeddedPostgres postgres = EmbeddedPostgres.start(work.resolve("pg"))) {
      URI uri = URI.create(postgres.createDatabase("kr_board"));
      String jdbc = "jdbc:postgresql://" + uri.getHost() + ":" + uri.getPort() + uri.getPath();
      String[] credentials = uri.getUserInfo().split(":", 2);
      Flyway.configure().dataSource(jdbc, credentials[0], credentials[1]).locations("classpath:db/migration").load()
          .migrate();
      // The same read, but for the rule: the board's statement with its ACCEPTED as it was.
      String boardFromJson = LeaderboardSql.BOARD.replace(LeaderboardSql.ACCEPTED, ACCEPTED_FROM_JSON);
      if (boardFromJson.equals(LeaderboardSql.BOARD)) {
        throw new IllegalStateException("LeaderboardSql.BOARD no longer holds ACCEPTED as it is");
      }
      try (Connection c = DriverManager.getConnection(jdbc, credentials[0], credentials[1])) {
        System.out.printf(Locale.ROOT, "%-10s %-26s %s%n", "results", "board read (ranked_ms)", "rule from JSON");
        int seeded = 0;
        for (int size : sizes) {
          seed(c, seeded + 1, size);
          seeded = size;
          System.out.printf(Locale.ROOT, "%-10d %-26s %s%n", size, median(c, LeaderboardSql.BOARD),
              median(c, boardFromJson));
        }
      }
    } finally {
      try (var paths = Files.walk(work)) {
        paths.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
      }
    }
  }

  private static void seed(Connection c, int from, int to) throws SQLException {
    try (PreparedStatement rows = c.prepareStatement(SEED);
        PreparedStatement events = c.prepareStatement(SEED_EVENTS)) {
      rows.setInt(1, USERS);
      rows.setInt(2, from);
      rows.setInt(3, to);
      rows.executeUpdate();
      events.setInt(1, from);
      events.setInt(2, to);
      events.executeUpdate();
    }
    try (Statement s = c.createStatement()) {
      s.execute("VACUUM ANALYZE submissions");
      s.execute("ANALYZE submission_events");
    }
  }

  /**
   * The median of REPEATS reads of the board's top 20 (after three), in ms, and how many entries it had: the
   * statement prepared in the server and executed as the service's client does.
   */
  private static String median(Connection c, String sql) throws SQLException {
    List<Double> times = new ArrayList<>();
    int entries = 0;
    try (Statement s = c.createStatement()) {
      s.execute("DEALLOCATE ALL");
      s.execute("PREPARE board(text, text, text, int) AS " + sql);
      for (int i = 0; i < REPEATS + 3; i++) {
        long began = System.nanoTime();
        entries = 0;
        try (ResultSet rows = s.executeQuery("EXECUTE board('leaky-relu', 'H100', 'float32', 20)")) {
          while (rows.next()) {
            rows.getString("tests");
            rows.getString("samples");
            entries++;
          }
        }
        if (i >= 3) {
          times.add((System.nanoTime() - began) / 1e6);
        }
      }
    }
    times.sort(null);
    return String.format(Locale.ROOT, "%.1f ms (%d entries)", times.get(times.size() / 2), entries);
  }
}
