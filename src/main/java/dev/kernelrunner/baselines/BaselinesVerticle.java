package dev.kernelrunner.baselines;

import dev.kernelrunner.bus.Addresses;
import dev.kernelrunner.bus.Bus;
import dev.kernelrunner.config.AppConfig;
import dev.kernelrunner.model.BaselineJobs;
import dev.kernelrunner.model.Mode;
import dev.kernelrunner.model.NewSubmission;
import io.vertx.core.Future;
import io.vertx.core.VerticleBase;
import io.vertx.core.eventbus.DeliveryOptions;
import io.vertx.core.eventbus.Message;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * PyTorch's own times per GPU type, problem and dtype (issue 30). At each start: the files of BASELINES_DIR
 * (remote-agent/selftest/baselines.py's output) stored, in name order, then the figures of any baseline job that
 * ended while the service could not store them; ready once they are stored (a file that cannot be read or stored
 * stops the start, naming it). Then: an admin's request to measure them anew queues one baseline job per problem
 * and dtype ({@code baselines.measure}), owned by {@link #USER}, through the normal queue and backends; each that
 * ends BASELINED ({@code baselines.measured}, from the tracker) becomes the GPU type's newest baselines of its
 * problem, the older kept (the store's versions).
 */
public final class BaselinesVerticle extends VerticleBase {
  /** Who baseline jobs belong to: no token can name it (user ids have no ':'), and no quota holds it back; its jobs
   * take their turns in the queue beside every user's. */
  public static final String USER = "kr:baselines";
  private static final Duration CREATE_TIMEOUT = Duration.ofSeconds(30);
  private static final Logger log = LoggerFactory.getLogger(BaselinesVerticle.class);
  private final Path dir;

  public BaselinesVerticle(AppConfig config) {
    this.dir = config.agent().baselinesDir();
  }

  @Override
  public Future<?> start() {
    return loadFiles().compose(v -> loadUnstoredJobs())
        .compose(v -> Future.all(Bus.serve(vertx.eventBus(), Addresses.BASELINES_MEASURE, this::measure, log),
            Bus.serve(vertx.eventBus(), Addresses.BASELINES_MEASURED, this::measured, log)));
  }

  private Future<Void> loadFiles() {
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
        chain = chain.compose(v -> store(file).recover(error -> Future.failedFuture(new IllegalArgumentException(
            "BASELINES_DIR: " + file.getString("source") + " could not be stored: " + error.getMessage())))
            .mapEmpty());
      }
      return chain;
    });
  }

  /** Baseline jobs that ended while their figures could not be stored (the service stopped, the store failed). */
  private Future<Void> loadUnstoredJobs() {
    return Bus.request(vertx.eventBus(), Addresses.STORE_BASELINES_UNLOADED_JOBS, new JsonObject()).compose(found -> {
      Future<Void> chain = Future.succeededFuture();
      for (Object item : found.getJsonArray("jobs", new JsonArray())) {
        JsonObject job = (JsonObject) item;
        chain = chain.compose(v -> stored(job.getString("id"), job.getString("gpu_type"), job.getJsonObject("result"))
            .otherwiseEmpty().mapEmpty());
      }
      return chain;
    });
  }

  private Future<BaselineJobs.Queued> measure(BaselineJobs request) {
    List<BaselineJobs.Created> created = new ArrayList<>();
    Future<Void> chain = Future.succeededFuture();
    for (BaselineJobs.Job job : request.jobs()) {
      NewSubmission submission = new NewSubmission(USER, job.problem(), job.language(), request.gpuType(),
          job.dtype(), "", Mode.BASELINE, false);
      chain = chain.compose(v -> vertx.eventBus().<NewSubmission.Created>request(Addresses.SUBMISSIONS_CREATE,
              submission, new DeliveryOptions().setSendTimeout(CREATE_TIMEOUT.toMillis())).map(Message::body)
          .map(queued -> {
            created.add(new BaselineJobs.Created(queued.id(), job.problem(), job.dtype()));
            return null;
          }));
    }
    return chain.map(v -> {
      log.info("{} baseline jobs queued on {} for {}", created.size(), request.gpuType(), request.requestedBy());
      return new BaselineJobs.Queued(request.gpuType(), created);
    });
  }

  private Future<JsonObject> measured(BaselineJobs.Measured job) {
    return stored(job.submissionId(), job.gpuType(), job.fields());
  }

  /** A job's BASELINED stored as its GPU type's newest baselines of the problem; a malformed one is logged. */
  private Future<JsonObject> stored(String id, String gpuType, JsonObject fields) {
    JsonObject file;
    try {
      file = BaselineFile.ofJob(gpuType, fields == null ? new JsonObject() : fields);
    } catch (IllegalArgumentException e) {
      log.error("baseline job {} ended BASELINED, but its figures cannot be stored: {}", id, e.getMessage());
      return Future.failedFuture(e);
    }
    return store(new JsonObject().put("source", BaselineFile.source(id)).put("file", file));
  }

  private Future<JsonObject> store(JsonObject file) {
    return Bus.request(vertx.eventBus(), Addresses.STORE_BASELINES_LOAD, file).onSuccess(stored ->
        log.info("baselines {}: {} new measurements", file.getString("source"), stored.getInteger("inserted")));
  }
}
