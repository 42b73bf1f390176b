package dev.kernelrunner;

import dev.kernelrunner.bus.Addresses;
import dev.kernelrunner.bus.Bus;
import dev.kernelrunner.cli.TerminalClient;
import dev.kernelrunner.config.AppConfig;
import dev.kernelrunner.config.ConfigException;
import dev.kernelrunner.config.ConfigLoader;
import dev.kernelrunner.dstack.DstackApi;
import dev.kernelrunner.fleet.FleetManagerVerticle;
import dev.kernelrunner.store.EmbeddedPostgres;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonObject;
import java.net.BindException;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** Starts kernel-runner: configuration, the database (embedded unless DATABASE_URL), then the verticles. */
public final class Main {
  private static final Logger log = LoggerFactory.getLogger(Main.class);

  private Main() {}

  public static void main(String[] args) throws Exception {
    if (args.length > 0 && TerminalClient.COMMANDS.contains(args[0])) {
      System.exit(new TerminalClient(System.out, System.err, System.getenv()).run(args));
      return;
    }
    AppConfig config;
    try {
      config = ConfigLoader.load();
    } catch (ConfigException e) {
      System.err.println(e.getMessage());
      System.exit(2);
      return;
    }
    if (args.length > 0) {
      if (args.length == 1 && args[0].equals("create-fleet")) {
        System.exit(createFleet(config));
      }
      System.err.println("usage: java -jar kernel-runner.jar [create-fleet | "
          + String.join(" | ", new java.util.TreeSet<>(TerminalClient.COMMANDS)) + " ...]");
      System.exit(2);
      return;
    }
    // Before anything under DATA_DIR is touched: a second instance must not "recover" the first one's work.
    InstanceLock lock;
    try {
      lock = InstanceLock.acquire(config.database().dataDir());
    } catch (InstanceLock.HeldException e) {
      System.err.println("kernel-runner: " + e.getMessage());
      System.exit(1);
      return;
    }
    warnAboutPrivileges(config);
    EmbeddedPostgres embedded = null;
    String databaseUrl = config.database().url();
    if (databaseUrl == null) {
      try {
        embedded = EmbeddedPostgres.start(config.database().dataDir());
      } catch (IllegalStateException e) {
        System.err.println(e.getMessage());
        System.exit(1);
        return;
      }
      databaseUrl = embedded.url();
    }
    var meters = Metrics.registry();
    Vertx vertx = Metrics.vertx(meters, config.runtime().eventLoops());
    EmbeddedPostgres database = embedded;
    App app;
    try {
      app = App.deploy(vertx, config, databaseUrl, meters).toCompletionStage().toCompletableFuture().get(120, TimeUnit.SECONDS);
    } catch (Exception e) {
      BindException busy = cause(e, BindException.class);
      IllegalStateException refused = cause(e, IllegalStateException.class);
      if (busy != null) {
        System.err.println("kernel-runner: cannot listen on " + config.http().host() + ":" + config.http().port()
            + " (" + busy.getMessage() + "): another program uses that port; set HTTP_PORT or HTTP_HOST");
      } else if (refused != null) {
        // A start-up check that says what to change (the agent user's access, say): its message is the whole story.
        System.err.println("kernel-runner: " + refused.getMessage());
      } else {
        log.error("kernel-runner failed to start", e);
      }
      vertx.close().toCompletionStage().toCompletableFuture().get(30, TimeUnit.SECONDS);
      if (database != null) {
        database.close();
      }
      lock.release();
      System.exit(1);
      return;
    }
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      try {
        app.stop().compose(v -> vertx.close()).toCompletionStage().toCompletableFuture().get(60, TimeUnit.SECONDS);
      } catch (Exception e) {
        log.warn("unclean shutdown: {}", e.toString());
      }
      if (database != null) {
        database.close();
      }
      lock.release();
    }, "shutdown"));
    if (config.http().adminToken() == null) {
      String token = app.bootstrapAdminToken().toCompletionStage().toCompletableFuture().get(30, TimeUnit.SECONDS);
      if (token != null) {
        System.out.println("""
            ================================================================
             kernel-runner created the first admin token (shown only once):
               %s
             Use it as: Authorization: Bearer <token>
            ================================================================""".formatted(token));
      }
    }
    System.out.println("kernel-runner is listening on " + listeningOn(config.http().host(), app.httpPort()));
  }

  /** Where a client reaches the service: a wildcard bind is every interface, not an address to open. */
  static String listeningOn(String host, int port) {
    return everyInterface(host) ? "port " + port + " of every interface (from this machine: http://localhost:" + port + "/)"
        : "http://" + (host.contains(":") ? "[" + host + "]" : host) + ":" + port + "/";
  }

  /** Running as root is allowed (agents then run as AGENT_USER); exposing it on every interface deserves a word. */
  private static void warnAboutPrivileges(AppConfig config) {
    if (!HostCommands.isRoot()) {
      log.warn("agents run as this service's own user: submitted code can read what the service can (DATA_DIR "
          + "included); run the service as root to have agents run as the unprivileged AGENT_USER");
      return;
    }
    String host = config.http().host();
    if (everyInterface(host)) {
      log.warn("running as root and listening on every interface ({}): put it behind a proxy or set HTTP_HOST",
          host);
    }
  }

  private static boolean everyInterface(String host) {
    return host.equals("0.0.0.0") || host.equals("::") || host.equals("[::]");
  }

  private static <T extends Throwable> T cause(Throwable error, Class<T> type) {
    for (Throwable t = error; t != null; t = t.getCause()) {
      if (type.isInstance(t)) {
        return type.cast(t);
      }
    }
    return null;
  }

  /**
   * The one-off fleet command (the seed's create_amd_fleet.py): makes sure the AMD fleet exists, creating it
   * from conf/dstack/fleet.json and the AMD_* settings (only writing it with AMD_FLEET_DRY_RUN=true).
   */
  private static int createFleet(AppConfig config) throws Exception {
    Vertx vertx = Vertx.vertx();
    SimpleMeterRegistry meters = new SimpleMeterRegistry();
    try {
      JsonObject fleet = vertx.deployVerticle(new FleetManagerVerticle(config, meters,
          DstackApi.ifConfigured(vertx, config.dstack(), meters)))
          .compose(id -> Bus.request(vertx.eventBus(), Addresses.FLEET_ENSURE, new JsonObject()
              .put("gpu_type", config.amd().gpuType()).put("force", true), Duration.ofMinutes(10)))
          .toCompletionStage().toCompletableFuture().get(11, TimeUnit.MINUTES);
      System.out.println(fleet.encodePrettily());
      return fleet.getBoolean("ready", false) || fleet.getBoolean("dry_run", false) ? 0 : 1;
    } catch (java.util.concurrent.ExecutionException e) {
      System.err.println("could not create the fleet: " + e.getCause().getMessage());
      return 1;
    } finally {
      vertx.close().toCompletionStage().toCompletableFuture().get(30, TimeUnit.SECONDS);
    }
  }
}
