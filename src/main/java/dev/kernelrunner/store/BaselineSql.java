package dev.kernelrunner.store;

/** The {@code baselines} table's statements (V14): PyTorch's own times per GPU type, problem, dtype and method;
 * {@code source} is the file they were loaded from, or {@code job <submission id>} (BaselineFile.source). */
final class BaselineSql {
  private BaselineSql() {}

  /** One measurement; a second load of the same one changes nothing. */
  static final String INSERT = """
      INSERT INTO baselines (gpu_type, problem, dtype, method, tests, hardware, source, measured_at)
      VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
      ON CONFLICT (gpu_type, problem, dtype, method, measured_at) DO NOTHING""";

  private static final String NEWEST = """
      SELECT DISTINCT ON (gpu_type, problem, dtype, method) id FROM baselines
       ORDER BY gpu_type, problem, dtype, method, measured_at DESC, id DESC""";

  /** The newest measurement of each (gpu_type, problem, dtype, method) becomes the current one: first the others
   * stop being it (one current a key: a unique index), then it is marked. */
  static final String UNMARK_OLDER = "UPDATE baselines SET current = false WHERE current AND id NOT IN (" + NEWEST
      + ")";
  static final String MARK_NEWEST = "UPDATE baselines SET current = true WHERE NOT current AND id IN (" + NEWEST
      + ")";

  /** Baseline jobs that ended BASELINED whose figures are not stored (the service stopped before it stored them):
   * their id, GPU type and result (the BASELINED's fields). */
  static final String UNLOADED_JOBS = """
      SELECT s.id, s.gpu_type, s.result FROM submissions s
       WHERE s.status = 'BASELINED' AND s.mode = 'baseline'
         AND NOT EXISTS (SELECT 1 FROM baselines b WHERE b.source = 'job ' || s.id::text)
       ORDER BY s.finished_at""";

  /** The current baselines, filtered by GPU type, problem and dtype ({@code $1..$3}; null: any). */
  static final String CURRENT = """
      SELECT gpu_type, problem, dtype, method, tests, hardware, source, measured_at FROM baselines
       WHERE current AND ($1::text IS NULL OR gpu_type = $1) AND ($2::text IS NULL OR problem = $2)
         AND ($3::text IS NULL OR dtype = $3)
       ORDER BY gpu_type, problem, dtype, method""";
}
