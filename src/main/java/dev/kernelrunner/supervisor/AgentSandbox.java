package dev.kernelrunner.supervisor;

import dev.kernelrunner.HostCommands;
import dev.kernelrunner.config.AppConfig;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFileAttributeView;
import java.nio.file.attribute.PosixFilePermissions;
import java.nio.file.attribute.UserPrincipalLookupService;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What an agent (and the user code it runs) can reach: an environment built from nothing (never the service's
 * own, which holds ADMIN_TOKEN, METRICS_TOKEN, DATABASE_URL and dstack credentials), and, when the service runs
 * as root, an unprivileged account ({@code AGENT_USER}, created if absent) that owns nothing but its run's
 * folder. Blocking: use from a worker.
 */
public final class AgentSandbox {
  private static final Logger log = LoggerFactory.getLogger(AgentSandbox.class);
  /** Passed through when the service has them: what compilers, GPU runtimes and Python need, nothing secret. */
  static final List<String> TOOLCHAIN_VARIABLES = List.of("PATH", "LANG", "LC_ALL", "TZ", "LD_LIBRARY_PATH",
      "CUDA_HOME", "CUDA_PATH", "CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES", "ROCM_PATH", "HIP_PATH",
      "HIP_PLATFORM", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "HSA_OVERRIDE_GFX_VERSION");
  private static final String DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
  /** Groups that give access to GPU devices on Debian/Ubuntu (ROCm's /dev/kfd and /dev/dri are in them). */
  private static final List<String> GPU_GROUPS = List.of("video", "render");

  private final Map<String, String> environment;
  /** The account agents run as, or null: the service's own. */
  private final String user;
  private final List<String> prefix;

  private AgentSandbox(Map<String, String> environment, String user, List<String> prefix) {
    this.environment = environment;
    this.user = user;
    this.prefix = prefix;
  }

  /**
   * Builds the sandbox for {@code agent} from the service's environment {@code serviceEnv}; as root, makes sure
   * the agent account exists and can reach the agent's folder and {@code runsDir}.
   */
  public static AgentSandbox prepare(AppConfig.Agent agent, Path runsDir, Map<String, String> serviceEnv)
      throws IOException, InterruptedException {
    Map<String, String> env = environment(agent.env(), serviceEnv);
    if (!HostCommands.isRoot()) {
      return new AgentSandbox(env, null, List.of());
    }
    String user = agent.user();
    ensureUser(user);
    // Folders the agent user cannot enter (root's pyenv shims, say) would only shadow usable ones.
    env.put("PATH", String.join(":", java.util.Arrays.stream(env.get("PATH").split(":"))
        .filter(AgentSandbox::reachableByOthers).toList()));
    List<String> prefix = List.of("setpriv", "--reuid=" + user, "--regid=" + user, "--init-groups",
        "--no-new-privs", "--");
    // The agent reaches its run folder through DATA_DIR and runs/ without being able to list them.
    Path dataDir = runsDir.getParent();
    addSearchPermission(dataDir);
    Files.createDirectories(runsDir);
    Files.setPosixFilePermissions(runsDir, PosixFilePermissions.fromString("rwx--x--x"));
    Path workdir = agent.workdir().toAbsolutePath();
    List<String> probe = new ArrayList<>(prefix);
    probe.addAll(List.of("test", "-r", workdir.toString(), "-a", "-x", workdir.toString(), "-a", "-x",
        runsDir.toAbsolutePath().toString()));
    if (HostCommands.exec(probe, 30) != 0) {
      throw new IllegalStateException("agents run as '" + user + "' (the service runs as root), and that user "
          + "cannot reach AGENT_WORKDIR " + workdir + " or DATA_DIR " + dataDir.toAbsolutePath() + ": keep both "
          + "where every user may pass (the folders above them need o+x; /root is private), or set AGENT_USER to "
          + "a user that can");
    }
    log.info("running as root: agents run as the unprivileged user '{}'", user);
    return new AgentSandbox(env, user, prefix);
  }

  /** The agent's environment: PATH and the toolchain's variables if the service has them, then AGENT_ENV. */
  static Map<String, String> environment(List<String> entries, Map<String, String> serviceEnv) {
    Map<String, String> env = new LinkedHashMap<>();
    for (String name : TOOLCHAIN_VARIABLES) {
      if (serviceEnv.get(name) != null) {
        env.put(name, serviceEnv.get(name));
      }
    }
    env.putIfAbsent("PATH", DEFAULT_PATH);
    for (String entry : entries) {
      int eq = entry.indexOf('=');
      if (eq > 0) {
        env.put(entry.substring(0, eq), entry.substring(eq + 1));
      } else if (serviceEnv.get(entry) != null) {
        env.put(entry, serviceEnv.get(entry));
      }
    }
    env.put("PYTHONUNBUFFERED", "1");
    env.put("PYTHONDONTWRITEBYTECODE", "1");
    // No user site directory: user code runs as the agent's user and could leave a .pth there that every later
    // Python process of that user (a local worker's next agents) would run at its start.
    env.put("PYTHONNOUSERSITE", "1");
    return env;
  }

  /** The argv that runs {@code command} as the agent user. */
  public List<String> argv(List<String> command) {
    List<String> argv = new ArrayList<>(prefix);
    argv.addAll(command);
    return argv;
  }

  /** Sets the process's environment to the sandbox's, with HOME in its run folder. */
  public void apply(ProcessBuilder builder, Path runDir, String submissionId) {
    Map<String, String> env = builder.environment();
    env.clear();
    env.putAll(environment);
    env.put("HOME", runDir.toString());
    env.put("KERNEL_RUNNER_SUBMISSION_ID", submissionId);
  }

  /** Gives the run folder (and the payload in it) to the agent user, so that it alone can read and remove it. */
  public void handOver(Path runDir) throws IOException {
    if (user == null) {
      return;
    }
    UserPrincipalLookupService lookup = runDir.getFileSystem().getUserPrincipalLookupService();
    var owner = lookup.lookupPrincipalByName(user);
    var group = lookup.lookupPrincipalByGroupName(user);
    try (var files = Files.walk(runDir)) {
      for (Path path : files.toList()) {
        PosixFileAttributeView view = Files.getFileAttributeView(path, PosixFileAttributeView.class);
        view.setOwner(owner);
        view.setGroup(group);
      }
    }
    Files.setPosixFilePermissions(runDir, PosixFilePermissions.fromString("rwx------"));
  }

  public String user() {
    return user;
  }

  public Map<String, String> environment() {
    return environment;
  }

  private static void ensureUser(String user) throws IOException, InterruptedException {
    if (HostCommands.userExists(user)) {
      return;
    }
    List<String> options = new ArrayList<>(List.of("--user-group", "--no-create-home", "--home-dir", "/nonexistent",
        "--shell", "/usr/sbin/nologin"));
    List<String> groups = GPU_GROUPS.stream().filter(AgentSandbox::groupExists).toList();
    if (!groups.isEmpty()) {
      options.addAll(List.of("--groups", String.join(",", groups)));
    }
    int rc = HostCommands.addSystemUser(user, options);
    if (rc != 0) {
      throw new IllegalStateException("running as root, and could not create the agent user '" + user
          + "' (useradd exit " + rc + "); create it, or set AGENT_USER to an unprivileged user");
    }
    log.info("created the system user '{}' for agents (groups: {})", user, groups.isEmpty() ? "its own" : groups);
  }

  private static boolean groupExists(String group) {
    try {
      return Files.readAllLines(Path.of("/etc/group"), StandardCharsets.UTF_8).stream()
          .anyMatch(line -> line.startsWith(group + ":"));
    } catch (IOException e) {
      return false;
    }
  }

  /** Whether every folder from / down to {@code dir} lets others pass (o+x). */
  static boolean reachableByOthers(String dir) {
    if (dir.isEmpty() || !dir.startsWith("/")) {
      return false;
    }
    try {
      for (Path p = Path.of(dir); p != null; p = p.getParent()) {
        if (Files.isDirectory(p) && !Files.getPosixFilePermissions(p)
            .contains(java.nio.file.attribute.PosixFilePermission.OTHERS_EXECUTE)) {
          return false;
        }
      }
      return Files.isDirectory(Path.of(dir));
    } catch (IOException | RuntimeException e) {
      return false;
    }
  }

  private static void addSearchPermission(Path dir) throws IOException {
    var permissions = Files.getPosixFilePermissions(dir);
    if (permissions.add(java.nio.file.attribute.PosixFilePermission.OTHERS_EXECUTE)) {
      Files.setPosixFilePermissions(dir, permissions);
    }
  }
}
