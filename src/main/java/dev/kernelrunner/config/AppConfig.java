package dev.kernelrunner.config;

import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** Every setting of the service, read once at start-up (see {@link ConfigLoader}). */
public record AppConfig(Http http, Database database, Sse sse, Agent agent, Local local, Workers workers, Amd amd,
                        Dstack dstack, Runtime runtime, Quotas quotas, DstackWorkers dstackWorkers) {

  /**
   * How the dstack GPU type is served: {@code persistent} false is a dstack run per submission; true keeps up to
   * {@code AMD_FLEET_MAX_NODES} runs of the worker ({@code command}, given {@code publicUrl} and a worker token of
   * its own) on the fleet, starts one when work waits and none is free, stops one idle for {@code idleAfter}
   * (null: never) and replaces one that dies.
   */
  /**
   * Persistent worker runs: whether they are used, the service's URL as they reach it, their command, when an idle
   * one is stopped, and {@code tokenInSpec}: the operator accepts that a run's worker token goes in its spec (readable
   * by every member of the dstack project) when the service's dstack user may not manage project secrets.
   */
  public record DstackWorkers(boolean persistent, String publicUrl, String command, Duration idleAfter,
                              boolean tokenInSpec) {}

  /**
   * Per user: submissions in an hour, and GPU-seconds (from a run's start, PROVISIONING, to its end, counted when
   * it ends) in a day; each window begins with the first use after the last one ran out; 0 is no limit. With {@code Http.maxActivePerUser} they stop
   * a flood without stopping a person.
   */
  public record Quotas(int submissionsPerHour, int gpuSecondsPerDay) {}

  /**
   * {@code eventLoops}: Vert.x event-loop threads. Every verticle is one instance on one loop; on the 2-core
   * load benchmark one loop for all of them gave half the event latency of four, because an event crossed
   * loops (a thread wake-up each time) between the supervisor, tracker, store and HTTP verticles.
   */
  public record Runtime(int eventLoops) {}

  /**
   * {@code metricsToken} null: {@code /metrics} is open (for scrapers on a private network). Connection hygiene:
   * a connection with no traffic for {@code idleTimeout} is closed; a request whose headers and body have not
   * all arrived {@code headerTimeout} after the connection opened (or its previous response ended) is cut off;
   * at most {@code maxConnections} connections, {@code maxConnectionsPerAddress} of them from one address.
   */
  public record Http(String host, int port, String adminToken, int maxCodeBytes, int maxActivePerUser,
                     String metricsToken, Duration idleTimeout, Duration headerTimeout, int maxConnections,
                     int maxConnectionsPerAddress) {}

  /**
   * {@code url} is null for the embedded cluster under {@code dataDir}. {@code eventWriteRetry}: how long a
   * submission's events are held and retried while the database cannot store them, before the submission is
   * ended as ERROR (its terminal event is retried for as long as the service runs).
   */
  public record Database(String url, Path dataDir, int poolSize, Duration eventWriteRetry) {}

  /**
   * {@code maxPendingBytes}: what a stream may have written but not yet sent to a client that reads too slowly;
   * past it the client is disconnected (it resumes from the database with Last-Event-ID), so it never holds up
   * the others or the service's memory.
   */
  public record Sse(Duration heartbeat, Duration disconnectGrace, int maxPendingBytes, int maxStreamsPerUser) {}

  public record Limits(int compileSeconds, int testSeconds, int benchmarkSeconds) {}

  /**
   * The local agent: argv (never a shell string), its working directory and its limits. {@code user}: the
   * unprivileged account agents run as when the service runs as root. {@code env}: what the agent's otherwise
   * empty environment gets besides PATH, LANG and the toolchain's variables: {@code NAME} (passed from the
   * service's environment) or {@code NAME=value}.
   */
  public record Agent(List<String> command, Path workdir, Path problemsDir, Duration submissionTimeout,
                      Duration killGrace, int logTailLines, Limits limits, String user, List<String> env,
                      Duration runsRetention, int reviewSpeedup, Path baselinesDir) {}

  /**
   * GPUs of this host. {@code viaWorkers}: they are served by workers the service starts itself ({@code
   * workerCommand} in AGENT_WORKDIR, one worker per slot, a token of their own), the same path as other machines'
   * GPUs; else each submission's agent is a child process of the service.
   */
  public record Local(List<String> gpuTypes, int maxConcurrent, boolean viaWorkers, String workerCommand) {}

  /**
   * GPU types served by workers that connect to this service ({@code python3 -m remote_agent worker}); their
   * capacity is the connected workers'. {@code lostAfter}: how long a worker with a job may stay away before its
   * job is re-queued (once; the second time it is ended as ERROR). {@code checkEvery}: how often a quarantined
   * machine is given a check job (a known kernel in check mode) that lets it back when it passes.
   */
  public record Workers(List<String> gpuTypes, Duration lostAfter, Duration checkEvery) {}

  /** The seed's AMD_* settings; the dstack backend uses them. */
  public record Amd(String backend, String fleetName, String gpuType, String gpuMemory, int fleetMaxNodes,
                    String fleetIdleDuration, String spotPolicy, boolean fleetDryRun) {}

  /**
   * How the dstack backend reaches the dstack server's HTTP API: its URL, a user token and the project, found the
   * way dstack's own tools find them ({@code DSTACK_SERVER_URL}, {@code DSTACK_TOKEN}, {@code DSTACK_PROJECT},
   * else {@code ~/.dstack/config.yml}; null when neither says, and {@code source} tells which one did); the
   * per-request timeout, how often a run is polled, how long provisioning may take, how long "no capacity" is
   * retried (with a doubling backoff from {@code retryBackoff}), how long the agent gets after its last event
   * before its run is stopped, the run-name prefix that marks this service's runs, the task and fleet templates,
   * the agent folder sent with every task, the server's log storage ({@code auto}, {@code file},
   * {@code cloudwatch}: read; {@code none}: a fluent-bit server without Elasticsearch serves no logs, so nothing can
   * run there per submission), and the largest profile report a run may send through dstack's log.
   */
  public record Dstack(String serverUrl, String token, String project, String source, Duration requestTimeout,
                       Duration pollInterval, Duration provisioningTimeout, Duration noCapacityRetry,
                       Duration retryBackoff, Duration stopGrace, String runPrefix, Path taskTemplate,
                       Path fleetTemplate, Path agentDir, String logStorage, int profileReportMaxBytes) {
    public static final String NO_LOG_STORAGE = "none";

    public boolean configured() {
      return serverUrl != null && token != null && project != null;
    }

    @Override
    public String toString() {
      return "Dstack[" + serverUrl + ", project " + project + " from " + source + "]"; // never the token
    }
  }

  /**
   * A GPU type the service can take work for, the backend that serves it and how many run at once (for a worker
   * type: none until workers connect, see {@code tracker.capacity}).
   */
  public record GpuType(String name, String backend, int capacity) {}

  public static final String LOCAL_BACKEND = "local";
  public static final String DSTACK_BACKEND = "dstack";
  public static final String WORKER_BACKEND = "worker";

  /** Configured GPU types by name; a type served locally is never also served by workers or sent to dstack. */
  public Map<String, GpuType> gpuTypes() {
    Map<String, GpuType> types = new LinkedHashMap<>();
    for (String name : local.gpuTypes()) {
      types.put(name, local.viaWorkers() ? new GpuType(name, WORKER_BACKEND, 0)
          : new GpuType(name, LOCAL_BACKEND, local.maxConcurrent()));
    }
    for (String name : workers.gpuTypes()) {
      types.putIfAbsent(name, new GpuType(name, WORKER_BACKEND, 0));
    }
    types.putIfAbsent(amd.gpuType(), dstackWorkers.persistent() ? new GpuType(amd.gpuType(), WORKER_BACKEND, 0)
        : new GpuType(amd.gpuType(), DSTACK_BACKEND, amd.fleetMaxNodes()));
    return types;
  }
}
