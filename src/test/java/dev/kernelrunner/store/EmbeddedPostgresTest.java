package dev.kernelrunner.store;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.kernelrunner.support.TempDirs;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

class EmbeddedPostgresTest {

  @Test
  void missingServerBinariesNameThePackageToInstall() throws Exception {
    Path empty = TempDirs.directory("no-postgres");
    IllegalStateException error = assertThrows(IllegalStateException.class,
        () -> EmbeddedPostgres.start(empty.resolve("data"), null, empty));
    assertTrue(error.getMessage().contains("apt-get install -y postgresql"), error.getMessage());
    assertTrue(error.getMessage().contains("DATABASE_URL"), error.getMessage());
    IllegalStateException configured = assertThrows(IllegalStateException.class,
        () -> EmbeddedPostgres.start(empty.resolve("data"), empty.toString(), Path.of("/usr/lib/postgresql")));
    assertTrue(configured.getMessage().contains("'postgresql' package"));
  }
}
