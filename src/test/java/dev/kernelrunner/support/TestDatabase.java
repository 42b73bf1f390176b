package dev.kernelrunner.support;

import dev.kernelrunner.store.EmbeddedPostgres;
import java.nio.file.Path;
import java.util.UUID;

/** One real PostgreSQL cluster for the whole test run (the service's own embedded one); a database per suite. */
public final class TestDatabase {
  private static EmbeddedPostgres cluster;

  private TestDatabase() {}

  public static synchronized EmbeddedPostgres cluster() {
    if (cluster == null) {
      try {
        cluster = EmbeddedPostgres.start(Path.of("target/test-postgres"));
      } catch (Exception e) {
        throw new IllegalStateException("cannot start the test PostgreSQL cluster", e);
      }
      Runtime.getRuntime().addShutdownHook(new Thread(cluster::close));
    }
    return cluster;
  }

  /** A new, empty database; returns its postgresql:// URL. */
  public static String freshDatabase() {
    try {
      return cluster().createDatabase("t_" + UUID.randomUUID().toString().replace("-", ""));
    } catch (Exception e) {
      throw new IllegalStateException(e);
    }
  }
}
