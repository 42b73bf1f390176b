package dev.kernelrunner.baselines;

import dev.kernelrunner.bus.Addresses;
import dev.kernelrunner.bus.Bus;
import dev.kernelrunner.config.AppConfig;
import io.vertx.core.Future;
import io.vertx.core.VerticleBase;
import io.vertx.core.json.JsonObject;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Loads the baselines files of BASELINES_DIR (remote-agent/selftest/baselines.py's output) into the store at each
 * start, in name order; ready once they are stored. A file that cannot be read or stored stops the start, naming it.
 */
public final class BaselinesVerticle extends VerticleBase {
  private static final Logger log = LoggerFactory.getLogger(BaselinesVerticle.class);
  private final Path dir;

  public BaselinesVerticle(AppConfig config) {
    this.dir = config.agent().baselinesDir();
  }

  @Override
  public Future<?> start() {
    return vertx.executeBlocking(() -> {
      List<Path> files = new ArrayList<>();
      if (Files.isDirectory(dir)) {
        try (Stream<Path> entries = Files.list(dir)) {
          entries.filter(p -> p.getFileName().toString().endsWith(".json")).sorted().forEach(files::add);
        }
      }
      List<JsonObject> read = new ArrayList<>();
      for (Path file : files) {
        try {
          read.add(new JsonObject().put("source", file.getFileName().toString())
              .put("file", new JsonObject(Files.readString(file))));
        } catch (RuntimeException e) {
          throw new IllegalArgumentException("BASELINES_DIR: " + file + " is not a baselines file: " + e.getMessage());
        }
      }
      return read;
    }, false).compose(files -> {
      Future<Void> chain = Future.succeededFuture();
      for (JsonObject file : files) {
        chain = chain.compose(v -> Bus.<JsonObject>request(vertx.eventBus(), Addresses.STORE_BASELINES_LOAD, file)
            .recover(error -> Future.failedFuture(new IllegalArgumentException("BASELINES_DIR: "
                + file.getString("source") + " could not be stored: " + error.getMessage())))
            .map(stored -> {
              log.info("baselines {}: {} new measurements", file.getString("source"), stored.getInteger("inserted"));
              return null;
            }));
      }
      return chain;
    });
  }
}
