package dev.kernelrunner;

import dev.kernelrunner.backend.Backend;
import dev.kernelrunner.backend.RunOrder;
import dev.kernelrunner.baselines.BaselinesVerticle;
import dev.kernelrunner.bus.Addresses;
import dev.kernelrunner.bus.Bus;
import dev.kernelrunner.bus.LocalCodec;
import dev.kernelrunner.model.BaselineJobs;
import dev.kernelrunner.config.AppConfig;
import dev.kernelrunner.config.AppConfig.GpuType;
import dev.kernelrunner.dstack.DstackApi;
import dev.kernelrunner.dstack.DstackBackend;
import dev.kernelrunner.fleet.FleetManagerVerticle;
import dev.kernelrunner.http.HttpVerticle;
import dev.kernelrunner.model.Cancel;
import dev.kernelrunner.model.EventAppend;
import dev.kernelrunner.model.EventFrame;
import dev.kernelrunner.model.EventWrite;
import dev.kernelrunner.model.NewSubmission;
import dev.kernelrunner.model.Unfinished;
import dev.kernelrunner.model.LiveFrame;
import dev.kernelrunner.model.ProfileReport;
import dev.kernelrunner.model.Progress;
import dev.kernelrunner.model.Queues;
import dev.kernelrunner.registry.ActiveProcessRegistryVerticle;
import dev.kernelrunner.store.ResultStoreVerticle;
import dev.kernelrunner.supervisor.ProcessSupervisorVerticle;
import dev.kernelrunner.tracker.SubmissionTrackerVerticle;
import dev.kernelrunner.supervisor.LocalWorkersVerticle;
import dev.kernelrunner.workers.WorkerHubVerticle;
import dev.kernelrunner.workerruns.WorkerRunsVerticle;
import dev.kernelrunner.workers.WorkerProtocol;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.vertx.core.Deployable;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonObject;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;

/**
 * The verticles, deployed in dependency order: the store first (everyone persists through it), the HTTP
 * server last (so nothing is accepted before the rest is ready).
 */
public final class App {
  private final Vertx vertx;
  private final List<String> deployments;
  private final HttpVerticle http;
  private final PrometheusMeterRegistry meters;
  private final DstackApi dstackApi;

  private App(Vertx vertx, List<String> deployments, HttpVerticle http, PrometheusMeterRegistry meters,
              DstackApi dstackApi) {
    this.vertx = vertx;
    this.deployments = deployments;
    this.http = http;
    this.meters = meters;
    this.dstackApi = dstackApi;
  }

  public static Future<App> deploy(Vertx vertx, AppConfig config, String databaseUrl) {
    return deploy(vertx, config, databaseUrl, Metrics.registry());
  }

  /** Deploys with {@code meters}: the registry {@code vertx} reports into, when it was built by {@link Metrics}. */
  public static Future<App> deploy(Vertx vertx, AppConfig config, String databaseUrl,
                                   PrometheusMeterRegistry meters) {
    Map<String, GpuType> served = config.gpuTypes();
    Logs.carrySubmissionIds(vertx.eventBus());
    LocalCodec.register(vertx.eventBus(), Progress.Event.class, Progress.Exit.class, EventAppend.class,
        EventAppend.Stored.class, EventWrite.class, Unfinished.class, Unfinished.Asked.class,
        NewSubmission.class, NewSubmission.Created.class, LiveFrame.class, EventFrame.class, ProfileReport.class,
        WorkerProtocol.Connect.class, WorkerProtocol.Disconnect.class, WorkerProtocol.Lines.class,
        WorkerProtocol.Exit.class, WorkerProtocol.Consumed.class, WorkerProtocol.Push.class, Cancel.class,
        Cancel.Outcome.class, BaselineJobs.class, BaselineJobs.Queued.class, BaselineJobs.Measured.class,
        RunOrder.Start.class, RunOrder.Attach.class, RunOrder.Kill.class, RunOrder.Stopped.class,
        RunOrder.Reap.class, RunOrder.Sweep.class, Queues.class, Queues.Asked.class, Queues.Capacity.class,
        Queues.FailQueued.class);
    HttpVerticle http = new HttpVerticle(config, served, meters);
    Path runsDir = config.database().dataDir().toAbsolutePath().resolve("runs");
    // One client of the dstack server for the backend and the fleet manager: the version check is made once.
    DstackApi dstackApi = DstackApi.ifConfigured(vertx, config.dstack(), meters);
    Map<String, Backend> backends = new HashMap<>();
    WorkerHubVerticle workers = new WorkerHubVerticle(config);
    backends.put(AppConfig.WORKER_BACKEND, workers.backend());
    List<Supplier<Deployable>> order = new ArrayList<>(List.of(
        () -> new ResultStoreVerticle(databaseUrl, config.database().poolSize(), meters),
        () -> new BaselinesVerticle(config),
        () -> new ActiveProcessRegistryVerticle(config, meters),
        () -> workers,
        () -> new ProcessSupervisorVerticle(config, backends),
        () -> new FleetManagerVerticle(config, meters, dstackApi),
        () -> new SubmissionTrackerVerticle(config, served, meters),
        () -> http));
    if (config.local().viaWorkers() && !config.local().gpuTypes().isEmpty()) {
      order.add(() -> new LocalWorkersVerticle(config, http::actualPort)); // after HTTP: they connect to it
    }
    if (config.dstackWorkers().persistent()) {
      order.add(() -> new WorkerRunsVerticle(config, dstackApi)); // last: its workers connect to the HTTP server
    }
    List<String> ids = new ArrayList<>();
    // The backends other than the local one (which the supervisor makes: it owns the child processes).
    Future<Void> chain = DstackBackend.create(vertx, config, dstackApi, runsDir)
        .map(dstack -> {
          backends.put(AppConfig.DSTACK_BACKEND, dstack);
          return null;
        });
    for (Supplier<Deployable> verticle : order) {
      chain = chain.compose(v -> vertx.deployVerticle(verticle.get()).map(id -> {
        ids.add(id);
        return null;
      }));
    }
    return chain.map(v -> new App(vertx, ids, http, meters, dstackApi))
        .recover(error -> undeploy(vertx, ids).transform(ar -> {
          closeQuietly(dstackApi);
          return Future.failedFuture(error);
        }));
  }

  /** Creates the first admin token if none exists; the token comes back once, else empty. */
  public Future<String> bootstrapAdminToken() {
    return Bus.request(vertx.eventBus(), Addresses.STORE_TOKEN_BOOTSTRAP_ADMIN, new JsonObject())
        .map(reply -> reply.getString("token"));
  }

  public int httpPort() {
    return http.actualPort();
  }

  public PrometheusMeterRegistry meters() {
    return meters;
  }

  /** Undeploys in reverse order: HTTP first, the store last. */
  public Future<Void> stop() {
    return undeploy(vertx, deployments).andThen(ar -> closeQuietly(dstackApi));
  }

  private static void closeQuietly(DstackApi api) {
    if (api != null) {
      api.close();
    }
  }

  private static Future<Void> undeploy(Vertx vertx, List<String> ids) {
    Future<Void> chain = Future.succeededFuture();
    for (int i = ids.size() - 1; i >= 0; i--) {
      String id = ids.get(i);
      chain = chain.transform(ar -> vertx.undeploy(id));
    }
    return chain;
  }
}
