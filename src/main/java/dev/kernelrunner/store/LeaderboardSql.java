package dev.kernelrunner.store;

/**
 * The leaderboards' statements (over {@code submissions} and their {@code BENCHMARK_RESULT} events) and the
 * moderation of results.
 */
final class LeaderboardSql {
  private LeaderboardSql() {}

  /**
   * Results that may rank: benchmark runs that ended BENCHMARKED, that the judge passed, whose times a process that
   * never ran the submission's host code measured ({@code verification.timing.method = replayed}: not its own
   * process's) and no audit contradicts ({@code verification.timing.status = verified}: not pending or unverified),
   * run in a full room ({@code isolation.full}: a user of the job's own, every namespace, Landlock and the
   * system-call filter; remote-agent/README.md), not run by a worker of a pool not trusted to rank
   * ({@code runner.trusted}, which the worker hub writes over whatever the run said), not marked
   * {@code needs_review}: those whose {@code ranked_ms} is set, which the database computes from each row as it is
   * written (db/migration/V15__ranked_results.sql; read from the JSON on every read, the rule cost 270 ms a board of
   * 10,000 results); and not invalidated. Filtered by problem ({@code $1}), GPU type and dtype ({@code $2},
   * {@code $3}; null: any).
   */
  static final String ACCEPTED = """
      SELECT id, user_id, problem, gpu_type, dtype, created_at, ranked_ms AS geomean_ms
        FROM submissions
       WHERE ranked_ms IS NOT NULL AND invalidated_at IS NULL
         AND ($1::text IS NULL OR problem = $1) AND ($2::text IS NULL OR gpu_type = $2)
         AND ($3::text IS NULL OR dtype = $3)""";

  /** A ranked row's speedup over the reference its run timed (of {@code s}, its submission). */
  private static final String SPEEDUP = """
      CASE WHEN jsonb_typeof(s.result->'geomean_speedup') = 'number'
           THEN (s.result->>'geomean_speedup')::float8 END""";

  /**
   * Each user's best accepted result for a problem, GPU type and dtype (the earliest of equal ones), best first:
   * its tests as the result publishes them, and each test's timed samples from its BENCHMARK_RESULT event; the
   * first {@code $4} (null: all), whose samples alone are read.
   */
  static final String BOARD = "WITH accepted AS (" + ACCEPTED + """
      ), best AS (
        SELECT DISTINCT ON (user_id) * FROM accepted ORDER BY user_id, geomean_ms, created_at, id)
      SELECT b.id, b.user_id, b.created_at, %s AS speedup, s.result->'test_results' AS tests,
             (SELECT jsonb_agg(jsonb_build_object('test_id', e.payload #> '{result,test_id}',
                                                  'samples', e.payload #> '{result,runtime_stats,samples}')
                               ORDER BY e.seq)
                FROM submission_events e WHERE e.submission_id = b.id AND e.type = 'BENCHMARK_RESULT') AS samples
        FROM best b JOIN submissions s ON s.id = b.id
       ORDER BY b.geomean_ms, b.created_at, b.id
       LIMIT $4""".formatted(SPEEDUP);

  /**
   * A user's ({@code $4}) best speedups per GPU type and problem, among accepted results of any dtype: over the
   * reference timed in the run ({@code speedup}) and over the current stored baselines of the result's GPU type,
   * problem and dtype ({@code eager}, {@code torch_compile}: as BaselineSpeedup computes them, the geometric mean
   * over the tests both timed of baseline / result): what fast_p counts.
   */
  static final String BEST_SPEEDUPS = "WITH accepted AS (" + ACCEPTED + """
      ), over AS (
        SELECT a.gpu_type, a.problem, %s AS speedup, bl.method,
               (SELECT exp(avg(ln(x.m / x.r)))
                  FROM (SELECT CASE WHEN jsonb_typeof(t->'runtime_ms') = 'number'
                                    THEN (t->>'runtime_ms')::float8 END AS r,
                               CASE WHEN jsonb_typeof(bl.tests #> ARRAY[t->>'name', 'median']) = 'number'
                                    THEN (bl.tests #>> ARRAY[t->>'name', 'median'])::float8 END AS m
                          FROM jsonb_array_elements(s.result->'test_results') t) x
                 WHERE x.r > 0 AND x.m > 0) AS baseline_speedup
          FROM accepted a JOIN submissions s ON s.id = a.id
          LEFT JOIN baselines bl ON bl.current AND bl.gpu_type = a.gpu_type AND bl.problem = a.problem
                                AND bl.dtype = a.dtype
         WHERE a.user_id = $4)
      SELECT gpu_type, problem, max(speedup) AS speedup,
             max(baseline_speedup) FILTER (WHERE method = 'eager') AS eager,
             max(baseline_speedup) FILTER (WHERE method = 'torch_compile') AS torch_compile
        FROM over GROUP BY gpu_type, problem ORDER BY gpu_type, problem""".formatted(SPEEDUP);

  /** Every board that has entries: problem, GPU type, dtype and how many users rank there. */
  static final String BOARDS = "WITH accepted AS (" + ACCEPTED + """
      ) SELECT problem, gpu_type, dtype, count(DISTINCT user_id) AS entries
          FROM accepted GROUP BY problem, gpu_type, dtype ORDER BY problem, gpu_type, dtype""";

  /** Takes a result off the boards ({@code $2} reason, {@code $3} admin); the owner sees the reason. */
  static final String INVALIDATE = """
      UPDATE submissions SET invalidated_at = now(), invalidated_reason = $2, invalidated_by = $3
       WHERE id = $1 RETURNING id, invalidated_at, invalidated_reason, invalidated_by""";

  /** Undoes {@link #INVALIDATE}. */
  static final String RESTORE = """
      UPDATE submissions SET invalidated_at = NULL, invalidated_reason = NULL, invalidated_by = NULL
       WHERE id = $1 RETURNING id, invalidated_at, invalidated_reason, invalidated_by""";
}
