package dev.kernelrunner.store;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.sqlclient.Row;

/** Every statement on {@code api_tokens}. */
final class TokenSql {
  private TokenSql() {}

  /** A token; a worker token with its pool, the GPU types it may serve (null: any) and whether it may rank. */
  static final String INSERT = """
      INSERT INTO api_tokens (token_hash, user_id, role, created_by, pool, gpu_types, trusted)
      VALUES ($1, $2, $3, $4, $5, $6, $7)""";

  static final String LOOKUP = """
      SELECT left(token_hash, 16) AS id, user_id, role, pool, gpu_types, trusted, machine_key, machine_bound_at
        FROM api_tokens WHERE token_hash = $1 AND revoked_at IS NULL""";

  /**
   * Binds live worker token {@code $1} (its id) to machine key {@code $2}, unless it is bound to another; returns
   * the token when it is bound to that key now.
   */
  static final String BIND = """
      UPDATE api_tokens SET machine_key = $2, machine_bound_at = COALESCE(machine_bound_at, now())
       WHERE left(token_hash, 16) = $1 AND role = 'worker' AND revoked_at IS NULL
         AND (machine_key IS NULL OR machine_key = $2)
      RETURNING machine_key, machine_bound_at""";

  /** Frees live worker token {@code $1} from its machine (an admin's: the next machine to enroll binds it). */
  static final String UNBIND = """
      UPDATE api_tokens SET machine_key = NULL, machine_bound_at = NULL
       WHERE left(token_hash, 16) = $1 AND role = 'worker' AND revoked_at IS NULL
      RETURNING left(token_hash, 16) AS id""";

  /**
   * Newest first, paged by the unique (created_at, token_hash); a token's public id is the first 16 hex digits
   * of its hash (it tells nothing of the token). {@code $1}, {@code $2}: the cursor (null: from the newest).
   */
  static final String LIST = """
      SELECT left(token_hash, 16) AS id, token_hash, user_id, role, created_by, created_at, revoked_at, pool,
             gpu_types, trusted, machine_key, machine_bound_at
        FROM api_tokens
       WHERE $1::timestamptz IS NULL OR (created_at, token_hash) < ($1, $2)
       ORDER BY created_at DESC, token_hash DESC
       LIMIT $3""";

  /** Revokes the token whose id (hash prefix) is {@code $1}; returns it if it was live. */
  static final String REVOKE = """
      UPDATE api_tokens SET revoked_at = now()
       WHERE left(token_hash, 16) = $1 AND revoked_at IS NULL
      RETURNING left(token_hash, 16) AS id, user_id, role""";

  /** Revokes every live token of user {@code $1} with role {@code $2} (a worker run's: its user is the run). */
  static final String REVOKE_USER = """
      UPDATE api_tokens SET revoked_at = now()
       WHERE user_id = $1 AND role = $2 AND revoked_at IS NULL
      RETURNING left(token_hash, 16) AS id, user_id, role""";

  /** Inserts the first admin token only if there is none yet. */
  static final String INSERT_FIRST_ADMIN = """
      INSERT INTO api_tokens (token_hash, user_id, role, created_by)
      SELECT $1, 'admin', 'admin', 'bootstrap' WHERE NOT EXISTS (SELECT 1 FROM api_tokens WHERE role = 'admin')""";

  /** {@link #LIST}'s rows as the admin API shows them, with {@code cursor_key} (the hash) for the next page. */
  static JsonArray toJson(Iterable<Row> rows) {
    JsonArray tokens = new JsonArray();
    for (Row row : rows) {
      tokens.add(new JsonObject().put("id", row.getString("id")).put("user_id", row.getString("user_id"))
          .put("role", row.getString("role")).put("created_by", row.getString("created_by"))
          .put("created_at", SubmissionSql.text(row.getOffsetDateTime("created_at")))
          .put("revoked_at", SubmissionSql.text(row.getOffsetDateTime("revoked_at")))
          .put("cursor_key", row.getString("token_hash")));
      if ("worker".equals(row.getString("role"))) {
        tokens.getJsonObject(tokens.size() - 1).mergeIn(pool(row));
      }
    }
    return tokens;
  }

  /**
   * A worker token's pool as the API shows it: {@code pool}, {@code gpu_types} (null: any), {@code trusted}, and the
   * machine it is bound to ({@code machine}: its key's fingerprint and since when; null while unbound).
   */
  static JsonObject pool(Row row) {
    String[] types = row.getArrayOfStrings("gpu_types");
    dev.kernelrunner.workers.MachineKey key = dev.kernelrunner.workers.MachineKey.parse(row.getString("machine_key"));
    return new JsonObject().put("pool", row.getString("pool") == null ? "default" : row.getString("pool"))
        .put("gpu_types", types == null ? null : new JsonArray(java.util.List.of((Object[]) types)))
        .put("trusted", row.getBoolean("trusted"))
        .put("machine", key == null ? null : new JsonObject().put("fingerprint", key.fingerprint())
            .put("bound_at", SubmissionSql.text(row.getOffsetDateTime("machine_bound_at"))));
  }
}
