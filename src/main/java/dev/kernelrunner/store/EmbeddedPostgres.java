package dev.kernelrunner.store;

import dev.kernelrunner.HostCommands;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.SecureRandom;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HexFormat;
import java.util.List;
import java.util.Optional;
import java.util.stream.Stream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A private PostgreSQL cluster under {@code DATA_DIR/postgres}, started from the machine's server binaries on
 * a free loopback port. PostgreSQL refuses to run as root, so a root service runs it as an unprivileged
 * system user. Blocking: call it from {@code main} or a worker, never from an event loop.
 */
public final class EmbeddedPostgres implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(EmbeddedPostgres.class);
  private static final String DB_USER = "kernel_runner";
  private static final String DB_NAME = "kernel_runner";
  private static final String SYSTEM_USER = "kernel-runner";

  private final Path binDir;
  private final Path dataDir;
  private final Path pgData;
  private final List<String> runAs;
  private final String password;
  private final String systemUser;
  private int port;

  private EmbeddedPostgres(Path binDir, Path dataDir, List<String> runAs, String password, String systemUser) {
    this.systemUser = systemUser;
    this.binDir = binDir;
    this.dataDir = dataDir;
    this.pgData = dataDir.resolve("postgres");
    this.runAs = runAs;
    this.password = password;
  }

  /** Starts (creating on first use) the cluster under {@code dataDir}. */
  public static EmbeddedPostgres start(Path dataDir) throws IOException, InterruptedException {
    return start(dataDir, System.getenv("PG_BIN_DIR"), Path.of("/usr/lib/postgresql"));
  }

  /** As {@link #start(Path)}, with binaries from {@code binDir} if set, else the newest under {@code searchRoot}. */
  public static EmbeddedPostgres start(Path dataDir, String binDir, Path searchRoot)
      throws IOException, InterruptedException {
    Path bin = findBinaries(binDir, searchRoot).orElseThrow(() -> new IllegalStateException(
        "PostgreSQL server binaries (initdb, pg_ctl, postgres) were not found. Install the 'postgresql' "
            + "package (Debian/Ubuntu: apt-get install -y postgresql), set PG_BIN_DIR to their folder, "
            + "or set DATABASE_URL to use an existing server."));
    Path dir = dataDir.toAbsolutePath().normalize();
    Files.createDirectories(dir);
    // The cluster's user must be able to reach its folder.
    Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwxr-xr-x"));
    List<String> runAs = List.of();
    String systemUser = null;
    if (HostCommands.isRoot()) {
      systemUser = ensureSystemUser();
      runAs = List.of("runuser", "-u", systemUser, "--");
    }
    Path passwordFile = dir.resolve("postgres.password");
    String password;
    // Readable by the service's user only (agents run as another user when the service is root): created with
    // its final permissions, and an older file's loosened ones are put back.
    if (Files.exists(passwordFile)) {
      Files.setPosixFilePermissions(passwordFile, PosixFilePermissions.fromString("rw-------"));
      password = Files.readString(passwordFile).trim();
    } else {
      byte[] bytes = new byte[24];
      new SecureRandom().nextBytes(bytes);
      password = HexFormat.of().formatHex(bytes);
      Files.createFile(passwordFile, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
      Files.writeString(passwordFile, password);
    }
    EmbeddedPostgres pg = new EmbeddedPostgres(bin, dir, runAs, password, systemUser);
    pg.startCluster(systemUser);
    return pg;
  }

  /** {@code postgresql://user:password@127.0.0.1:port/kernel_runner} */
  public String url() {
    return url(DB_NAME);
  }

  public String url(String database) {
    return "postgresql://" + DB_USER + ":" + password + "@127.0.0.1:" + port + "/" + database;
  }

  /** Creates another database in this cluster (the tests give each suite its own). */
  public String createDatabase(String name) throws SQLException {
    try (Connection c = DriverManager.getConnection(jdbc("postgres"), DB_USER, password)) {
      c.createStatement().execute("CREATE DATABASE \"" + name.replace("\"", "") + "\"");
    }
    return url(name);
  }

  private void startCluster(String systemUser) throws IOException, InterruptedException {
    if (!Files.exists(pgData.resolve("PG_VERSION"))) {
      initdb(systemUser);
    }
    if (run(List.of(binDir.resolve("pg_ctl").toString(), "-D", pgData.toString(), "status"), 30) == 0) {
      log.info("stopping a cluster left running under {}", pgData);
      run(List.of(binDir.resolve("pg_ctl").toString(), "-D", pgData.toString(), "-m", "fast", "-w", "stop"), 60);
    }
    if (port == 0) {
      port = freePort();
    }
    // Settings we own are rewritten at every start; postgresql.conf includes them.
    Path ours = pgData.resolve("kernel_runner.conf");
    Files.writeString(ours, String.join("\n",
        "listen_addresses = '127.0.0.1'",
        "port = " + port,
        "unix_socket_directories = ''",
        "max_connections = 200",
        "") );
    chown(ours, systemUser);
    Path logFile = dataDir.resolve("postgres.log");
    if (systemUser != null && !Files.exists(logFile)) {
      Files.createFile(logFile);
      chown(logFile, systemUser);
    }
    int rc = run(List.of(binDir.resolve("pg_ctl").toString(), "-D", pgData.toString(), "-l", logFile.toString(),
        "-w", "-t", "60", "start"), 90);
    if (rc != 0) {
      throw new IllegalStateException("PostgreSQL did not start (pg_ctl exit " + rc + "); see " + logFile
          + ":\n" + tail(logFile));
    }
    ensureDatabase();
    log.info("embedded PostgreSQL running on 127.0.0.1:{} (data in {})", port, pgData);
  }

  private void initdb(String systemUser) throws IOException, InterruptedException {
    Files.createDirectories(pgData);
    Files.setPosixFilePermissions(pgData, PosixFilePermissions.fromString("rwx------"));
    chown(pgData, systemUser);
    Path pwfile = dataDir.resolve("initdb.pw");
    Files.writeString(pwfile, password + "\n");
    Files.setPosixFilePermissions(pwfile, PosixFilePermissions.fromString("rw-------"));
    chown(pwfile, systemUser);
    try {
      int rc = run(List.of(binDir.resolve("initdb").toString(), "-D", pgData.toString(), "-U", DB_USER,
          "--pwfile=" + pwfile, "-A", "scram-sha-256", "-E", "UTF8", "--no-locale"), 120);
      if (rc != 0) {
        throw new IllegalStateException("initdb failed with exit " + rc + " for " + pgData);
      }
    } finally {
      Files.deleteIfExists(pwfile);
    }
    Files.writeString(pgData.resolve("postgresql.conf"), "\ninclude_if_exists = 'kernel_runner.conf'\n",
        java.nio.file.StandardOpenOption.APPEND);
  }

  private void ensureDatabase() throws IOException {
    try (Connection c = DriverManager.getConnection(jdbc("postgres"), DB_USER, password)) {
      var rs = c.createStatement().executeQuery("SELECT 1 FROM pg_database WHERE datname = '" + DB_NAME + "'");
      if (!rs.next()) {
        c.createStatement().execute("CREATE DATABASE " + DB_NAME);
      }
    } catch (SQLException e) {
      throw new IOException("cannot prepare database " + DB_NAME + ": " + e.getMessage(), e);
    }
  }

  private String jdbc(String database) {
    return "jdbc:postgresql://127.0.0.1:" + port + "/" + database;
  }

  /** Starts the cluster again after {@link #close()}, on the same port (fault-injection tests use it). */
  public void restart() throws IOException, InterruptedException {
    startCluster(systemUser);
  }

  @Override
  public void close() {
    try {
      run(List.of(binDir.resolve("pg_ctl").toString(), "-D", pgData.toString(), "-m", "fast", "-w", "stop"), 60);
      log.info("embedded PostgreSQL stopped");
    } catch (IOException | InterruptedException e) {
      log.warn("could not stop embedded PostgreSQL: {}", e.toString());
    }
  }

  static Optional<Path> findBinaries(String configured, Path root) {
    if (configured != null && !configured.isBlank()) {
      Path dir = Path.of(configured);
      return Files.isExecutable(dir.resolve("initdb")) ? Optional.of(dir) : Optional.empty();
    }
    if (!Files.isDirectory(root)) {
      return Optional.empty();
    }
    try (Stream<Path> versions = Files.list(root)) {
      return versions.map(v -> v.resolve("bin"))
          .filter(bin -> Files.isExecutable(bin.resolve("initdb")) && Files.isExecutable(bin.resolve("pg_ctl")))
          .max(Comparator.comparing(EmbeddedPostgres::version));
    } catch (IOException e) {
      return Optional.empty();
    }
  }

  private static int version(Path bin) {
    try {
      return Integer.parseInt(bin.getParent().getFileName().toString());
    } catch (NumberFormatException e) {
      return 0;
    }
  }

  /** An unprivileged system user for the cluster: {@code postgres} where the package made one, else ours. */
  private static String ensureSystemUser() throws IOException, InterruptedException {
    for (String user : List.of("postgres", SYSTEM_USER)) {
      if (HostCommands.userExists(user)) {
        return user;
      }
    }
    int rc = HostCommands.addSystemUser(SYSTEM_USER, List.of("--no-create-home", "--shell", "/usr/sbin/nologin"));
    if (rc != 0) {
      throw new IllegalStateException("running as root, and could not create the system user '" + SYSTEM_USER
          + "' for PostgreSQL (useradd exit " + rc + "); run the service as another user or set DATABASE_URL");
    }
    return SYSTEM_USER;
  }

  private static void chown(Path path, String user) throws IOException, InterruptedException {
    if (user != null && HostCommands.exec(List.of("chown", user, path.toString()), 30) != 0) {
      throw new IOException("cannot give " + path + " to " + user);
    }
  }

  private int run(List<String> command, int timeoutSeconds) throws IOException, InterruptedException {
    List<String> argv = new ArrayList<>(runAs);
    argv.addAll(command);
    return HostCommands.exec(argv, timeoutSeconds);
  }

  private static String tail(Path file) {
    try {
      List<String> lines = Files.readAllLines(file);
      return String.join("\n", lines.subList(Math.max(0, lines.size() - 20), lines.size()));
    } catch (IOException e) {
      return "(no log)";
    }
  }

  private static int freePort() throws IOException {
    try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      return socket.getLocalPort();
    }
  }
}
