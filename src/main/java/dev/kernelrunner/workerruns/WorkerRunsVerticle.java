package dev.kernelrunner.workerruns;

import dev.kernelrunner.backend.ShellWords;
import dev.kernelrunner.bus.Addresses;
import dev.kernelrunner.bus.Bus;
import dev.kernelrunner.config.AppConfig;
import dev.kernelrunner.dstack.DstackApi;
import dev.kernelrunner.dstack.DstackError;
import dev.kernelrunner.dstack.RunNames;
import dev.kernelrunner.dstack.RunSnapshot;
import dev.kernelrunner.dstack.TarArchive;
import dev.kernelrunner.dstack.Templates;
import dev.kernelrunner.model.Queues;
import io.vertx.core.Future;
import io.vertx.core.VerticleBase;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * {@code DSTACK_WORKER_MODE=persistent}: the dstack GPU type is served by workers that run on the fleet as dstack
 * runs of their own ({@code <prefix>w-<8 random>}), each with a worker token of its own (its user is the run's
 * name) and {@code PUBLIC_URL} to connect to. Every tick it looks at the type's queue (tracker), the connected
 * workers (hub) and dstack's active runs, and does what {@link WorkerRunsPlan} says: start runs while work waits
 * that no free worker will take (up to AMD_FLEET_MAX_NODES), stop runs idle for AMD_FLEET_IDLE_DURATION, forget runs
 * that died (a job they held is re-queued by the hub, and a new run is started for it). A stopped or forgotten
 * run's token is revoked. Runs found at start (the service restarted) are adopted.
 */
public class WorkerRunsVerticle extends VerticleBase {
  private static final Logger log = LoggerFactory.getLogger(WorkerRunsVerticle.class);
  /**
   * The pool of the workers' tokens: trusted (they are the service's own runs on its own fleet; a member of the
   * dstack project, who can read a run's spec, can also reach its machine).
   */
  public static final String POOL = "dstack-workers";

  private final AppConfig config;
  private final DstackApi api;
  private final String gpuType;
  private final RunNames names;
  private final Map<String, Tracked> runs = new LinkedHashMap<>();
  private JsonObject taskTemplate;
  private boolean ticking;
  /** Whether worker tokens go in project secrets: true, false (not allowed), or null (not known yet). */
  private Boolean secretsUsable;
  private static final String SECRETS_NEEDED = "DSTACK_WORKER_MODE=persistent keeps each worker run's token in a "
      + "dstack project secret, and the service's dstack user may not manage the project's secrets (it needs to be "
      + "a project manager or an admin); a run spec holding the token would be readable by every member of the "
      + "project. Give the service a dstack project of its own with that role, or set DSTACK_WORKER_TOKEN_IN_SPEC=true "
      + "to accept tokens in run specs";

  /** A run of ours and what we know of it. */
  private static final class Tracked {
    final long startedAt = System.nanoTime();
    long idleSince;
    /** Once dstack has listed it: before that, a run missing from the list is on its way, not dead. */
    boolean listed;
  }

  public WorkerRunsVerticle(AppConfig config, DstackApi api) {
    this.config = config;
    this.api = api;
    this.gpuType = config.amd().gpuType();
    this.names = new RunNames(config.dstack().runPrefix(), new SecureRandom());
  }

  @Override
  public Future<?> start() {
    return vertx.executeBlocking(() -> Templates.load(config.dstack().taskTemplate()), false)
        .compose(template -> checkSecrets().map(template))
        .map(template -> {
          taskTemplate = template;
          long every = Math.max(500, config.dstack().pollInterval().toMillis());
          vertx.setPeriodic(every, t -> tick());
          return null;
        });
  }

  /**
   * A run's spec, env included, is readable by every member of the dstack project (server/routers/runs.py:52-117;
   * only ssh_key is redacted, services/jobs/__init__.py:525-526), so a worker's token goes in a project secret
   * instead, referenced as {@code ${{ secrets.NAME }}} and filled in only when the job reaches its runner
   * (pipeline_tasks/jobs_running.py:626-634). Managing secrets needs a project manager (routers/secrets.py): without
   * that right this mode refuses to start unless the operator accepted tokens in specs
   * ({@code DSTACK_WORKER_TOKEN_IN_SPEC=true}). A server not reachable now is asked again at each run's start.
   */
  private Future<Void> checkSecrets() {
    if (api == null) {
      return Future.succeededFuture();
    }
    // The project first: a token refused there is a wrong token, not a missing right (asked again at a run).
    Future<Boolean> usable = api.projectAccess().compose(v -> api.secretsAccess().map(x -> Boolean.TRUE)
        .recover(error -> error instanceof DstackError e && e.kind() == DstackError.Kind.FORBIDDEN
            ? Future.succeededFuture(Boolean.FALSE) : Future.failedFuture(error)));
    return usable.recover(error -> {
      log.warn("could not ask dstack whether worker tokens can be kept in project secrets ({}); asked again at the "
          + "first worker run", error.getMessage());
      return Future.succeededFuture(null);
    }).compose(answer -> {
      secretsUsable = answer;
      if (!Boolean.FALSE.equals(answer)) {
        return Future.succeededFuture();
      }
      if (config.dstackWorkers().tokenInSpec()) {
        log.warn("the dstack user may not manage project secrets: worker tokens go in run specs, which every member "
            + "of the dstack project can read (DSTACK_WORKER_TOKEN_IN_SPEC=true)");
        return Future.succeededFuture();
      }
      return Future.failedFuture(SECRETS_NEEDED);
    });
  }

  /** The project secret of a worker run's token (secret names: services/secrets.py:25; names in ${{ }}: no '-'). */
  static String secretName(String runName) {
    return "kr_worker_token_" + runName.replace('-', '_');
  }

  private void tick() {
    if (ticking || api == null) {
      return;
    }
    ticking = true;
    Future<Queues> queues = vertx.eventBus().<Queues>request(Addresses.TRACKER_QUEUES, new Queues.Asked())
        .map(io.vertx.core.eventbus.Message::body);
    Future<JsonObject> workers = Bus.request(vertx.eventBus(), Addresses.WORKERS_LIST, new JsonObject());
    Future<List<RunSnapshot>> active = api.activeRuns();
    Future.all(queues, workers, active).onSuccess(all -> {
      int queued = queues.result().of(gpuType).queued();
      Map<String, WorkerRunsPlan.Worker> byRun = new HashMap<>();
      for (Object item : workers.result().getJsonArray("workers", new JsonArray())) {
        JsonObject worker = (JsonObject) item;
        if (gpuType.equals(worker.getString("gpu_type")) && worker.getBoolean("connected", false)) {
          byRun.put(worker.getString("token_user"), worker.getJsonObject("current_job") == null
              ? WorkerRunsPlan.Worker.IDLE : WorkerRunsPlan.Worker.BUSY);
        }
      }
      // A run stopping (terminating) is on its way out: never adopted back, never counted as on its way.
      Set<String> alive = active.result().stream().filter(run -> !run.isFinal() && !"terminating".equals(run.status()))
          .map(RunSnapshot::name)
          .filter(name -> name != null && names.isWorker(name)).collect(Collectors.toSet());
      alive.stream().filter(name -> !runs.containsKey(name)).forEach(name -> {
        log.info("worker run {} found on dstack: adopted", name);
        runs.put(name, new Tracked());
      });
      long now = System.nanoTime();
      List<WorkerRunsPlan.Run> seen = new ArrayList<>();
      runs.forEach((name, run) -> {
        WorkerRunsPlan.Worker worker = byRun.getOrDefault(name, WorkerRunsPlan.Worker.NOT_CONNECTED);
        run.idleSince = worker != WorkerRunsPlan.Worker.IDLE ? 0 : run.idleSince == 0 ? now : run.idleSince;
        run.listed |= alive.contains(name);
        // A run not yet listed (being submitted, or listed only after the listing we hold) counts as starting;
        // one that never connects is stopped after the connect timeout.
        seen.add(new WorkerRunsPlan.Run(name, !run.listed || alive.contains(name), worker, run.startedAt,
            run.idleSince));
      });
      WorkerRunsPlan.Decision decision = WorkerRunsPlan.decide(queued, seen, config.amd().fleetMaxNodes(),
          config.dstackWorkers().idleAfter(), config.dstack().provisioningTimeout(), now);
      decision.forget().forEach(name -> {
        log.warn("worker run {} is no longer running on dstack: forgotten (its job, if any, is re-queued)", name);
        runs.remove(name);
        revoke(name);
      });
      decision.stop().forEach(this::stop);
      for (int i = 0; i < decision.start(); i++) {
        startRun();
      }
    }).onFailure(error -> log.warn("worker runs of {}: {}", gpuType, error.getMessage()))
        .onComplete(ar -> ticking = false);
  }

  private void startRun() {
    String runName = names.nextWorker();
    runs.put(runName, new Tracked());
    Bus.request(vertx.eventBus(), Addresses.FLEET_ENSURE, new JsonObject().put("gpu_type", gpuType),
            config.dstack().requestTimeout().multipliedBy(4))
        .compose(fleet -> Bus.request(vertx.eventBus(), Addresses.STORE_TOKEN_CREATE, new JsonObject()
            .put("user_id", runName).put("role", "worker").put("created_by", "worker-runs").put("pool", POOL)
            .put("gpu_types", new JsonArray().add(gpuType)).put("trusted", true)))
        .compose(token -> tokenReference(runName, token.getString("token")))
        .compose(reference -> vertx.executeBlocking(() -> TarArchive.ofFolder(config.dstack().agentDir()), false)
            .compose(api::archive).map(agent -> runSpec(runName, reference, agent)))
        .compose(api::applyRun)
        .onSuccess(snapshot -> log.info("worker run {} submitted for {}", runName, gpuType))
        .onFailure(error -> {
          log.warn("worker run {} did not start: {}", runName, error.getMessage());
          runs.remove(runName);
          revoke(runName);
          api.stopRuns(List.of(runName), false); // in case the apply went through after all
        });
  }

  /**
   * What the run's env holds for its token: a reference to the project secret it is put in, or (where secrets may
   * not be managed and the operator accepted it) the token itself.
   */
  private Future<String> tokenReference(String runName, String token) {
    if (Boolean.FALSE.equals(secretsUsable)) {
      return config.dstackWorkers().tokenInSpec() ? Future.succeededFuture(token)
          : Future.failedFuture(SECRETS_NEEDED);
    }
    String secret = secretName(runName);
    return api.putSecret(secret, token).map(v -> {
      secretsUsable = Boolean.TRUE;
      return "${{ secrets." + secret + " }}";
    }).recover(error -> {
      if (error instanceof DstackError e && e.kind() == DstackError.Kind.FORBIDDEN) {
        secretsUsable = Boolean.FALSE;
        return tokenReference(runName, token);
      }
      return Future.failedFuture(error);
    });
  }

  /** The run spec of a worker run (core/models/runs.py): the task template with the worker as its command. */
  JsonObject runSpec(String runName, String tokenReference, String agentArchive) {
    JsonObject task = Templates.task(taskTemplate, config.amd(), runName,
        new JsonObject().put("KERNEL_RUNNER_WORKER_TOKEN", tokenReference));
    task.remove("max_duration"); // a worker lives until it is stopped
    // dstack runs the commands in /bin/sh -i -c: every word we add is quoted (a URL may hold '&', ';' or spaces).
    // The worker replaces the shell (exec): dstack's stop, SIGINT to that process, reaches it
    // (runner/internal/runner/executor/executor.go:504-512).
    task.put("commands", new JsonArray().add("cd remote-agent").add("exec " + config.dstackWorkers().command()
        + " --server " + ShellWords.quote(config.dstackWorkers().publicUrl()) + " --gpu-type "
        + ShellWords.quote(gpuType) + " --host " + ShellWords.quote(runName)));
    return new JsonObject().put("run_name", runName).put("configuration", task)
        .put("file_archives", new JsonArray().add(new JsonObject().put("id", agentArchive).put("path", "remote-agent")));
  }

  private void stop(String runName) {
    log.info("worker run {} stopped (idle, or its worker never connected)", runName);
    runs.remove(runName);
    api.stopRuns(List.of(runName), false)
        .onFailure(error -> log.warn("could not stop worker run {}: {}", runName, error.getMessage()));
    revoke(runName);
  }

  /** Revokes the worker token made for {@code runName} (its user is the run's name) and deletes its secret. */
  private void revoke(String runName) {
    if (!Boolean.FALSE.equals(secretsUsable) && api != null) {
      api.deleteSecrets(List.of(secretName(runName))).onFailure(error -> {
        if (!(error instanceof DstackError e && e.kind() == DstackError.Kind.NOT_FOUND)) {
          log.warn("could not delete the token secret of worker run {}: {}", runName, error.getMessage());
        }
      });
    }
    Bus.request(vertx.eventBus(), Addresses.STORE_TOKEN_REVOKE, new JsonObject().put("user_id", runName)
            .put("role", "worker"))
        .onFailure(error -> log.warn("could not revoke the token of worker run {}: {}", runName, error.getMessage()));
  }
}
