package dev.kernelrunner.store;

/** Every statement on {@code profile_reports}. */
final class ProfileSql {
  private ProfileSql() {}

  /** Stores a submission's report, replacing one of an earlier run of it. */
  static final String PUT = """
      INSERT INTO profile_reports (submission_id, file_name, sha256, content) VALUES ($1, $2, $3, $4)
      ON CONFLICT (submission_id) DO UPDATE
         SET file_name = EXCLUDED.file_name, sha256 = EXCLUDED.sha256, content = EXCLUDED.content,
             created_at = now()""";

  static final String GET = "SELECT file_name, sha256, content FROM profile_reports WHERE submission_id = $1";
}
