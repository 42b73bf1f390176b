package dev.kernelrunner.store;

/** Every statement on {@code api_tokens}. */
final class TokenSql {
  private TokenSql() {}

  static final String INSERT = "INSERT INTO api_tokens (token_hash, user_id, role, created_by) VALUES ($1, $2, $3, $4)";

  static final String LOOKUP = "SELECT user_id, role FROM api_tokens WHERE token_hash = $1";

  /** Inserts the first admin token only if there is none yet. */
  static final String INSERT_FIRST_ADMIN = """
      INSERT INTO api_tokens (token_hash, user_id, role, created_by)
      SELECT $1, 'admin', 'admin', 'bootstrap' WHERE NOT EXISTS (SELECT 1 FROM api_tokens WHERE role = 'admin')""";
}
