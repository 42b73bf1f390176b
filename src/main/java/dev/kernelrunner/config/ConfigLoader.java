package dev.kernelrunner.config;

import io.vertx.core.json.DecodeException;
import io.vertx.core.json.JsonObject;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * Reads {@code conf/application.json} (or {@code CONFIG_FILE}, or the copy built into the jar), applies
 * environment overrides, and validates everything into an {@link AppConfig}.
 */
public final class ConfigLoader {

  /** One environment variable and the JSON path it overrides. */
  private record Override(String env, String section, String key) {}

  private static final List<Override> OVERRIDES = List.of(
      new Override("HTTP_HOST", "http", "host"),
      new Override("HTTP_PORT", "http", "port"),
      new Override("ADMIN_TOKEN", "http", "admin_token"),
      new Override("MAX_CODE_BYTES", "http", "max_code_bytes"),
      new Override("MAX_ACTIVE_PER_USER", "http", "max_active_per_user"),
      new Override("QUOTA_SUBMISSIONS_PER_HOUR", "quotas", "submissions_per_hour"),
      new Override("QUOTA_GPU_SECONDS_PER_DAY", "quotas", "gpu_seconds_per_day"),
      new Override("METRICS_TOKEN", "http", "metrics_token"),
      new Override("HTTP_IDLE_TIMEOUT_SECONDS", "http", "idle_timeout_seconds"),
      new Override("HTTP_HEADER_TIMEOUT_SECONDS", "http", "header_timeout_seconds"),
      new Override("HTTP_MAX_CONNECTIONS", "http", "max_connections"),
      new Override("HTTP_MAX_CONNECTIONS_PER_ADDRESS", "http", "max_connections_per_address"),
      new Override("EVENT_WRITE_RETRY_SECONDS", "database", "event_write_retry_seconds"),
      new Override("SSE_MAX_STREAMS_PER_USER", "sse", "max_streams_per_user"),
      new Override("AGENT_USER", "agent", "user"),
      new Override("AGENT_ENV", "agent", "env"),
      new Override("RUNS_RETENTION_HOURS", "agent", "runs_retention_hours"),
      new Override("DATABASE_URL", "database", "url"),
      new Override("DATA_DIR", "database", "data_dir"),
      new Override("DATABASE_POOL_SIZE", "database", "pool_size"),
      new Override("SSE_HEARTBEAT_SECONDS", "sse", "heartbeat_seconds"),
      new Override("DISCONNECT_GRACE_SECONDS", "sse", "disconnect_grace_seconds"),
      new Override("SSE_MAX_PENDING_BYTES", "sse", "max_pending_bytes"),
      new Override("AGENT_COMMAND", "agent", "command"),
      new Override("AGENT_WORKDIR", "agent", "workdir"),
      new Override("PROBLEMS_DIR", "agent", "problems_dir"),
      new Override("BASELINES_DIR", "agent", "baselines_dir"),
      new Override("SUBMISSION_TIMEOUT_SECONDS", "agent", "submission_timeout_seconds"),
      new Override("KILL_GRACE_SECONDS", "agent", "kill_grace_seconds"),
      new Override("LOG_TAIL_LINES", "agent", "log_tail_lines"),
      new Override("REVIEW_SPEEDUP", "agent", "review_speedup"),
      new Override("LOCAL_GPU_TYPES", "local", "gpu_types"),
      new Override("LOCAL_MAX_CONCURRENT", "local", "max_concurrent"),
      new Override("LOCAL_WORKERS", "local", "workers"),
      new Override("LOCAL_WORKER_COMMAND", "local", "worker_command"),
      new Override("WORKER_GPU_TYPES", "workers", "gpu_types"),
      new Override("WORKER_LOST_SECONDS", "workers", "lost_after_seconds"),
      new Override("WORKER_CHECK_SECONDS", "workers", "check_every_seconds"),
      new Override("AMD_BACKEND", "amd", "backend"),
      new Override("AMD_FLEET_NAME", "amd", "fleet_name"),
      new Override("AMD_GPU_TYPE", "amd", "gpu_type"),
      new Override("AMD_GPU_MEMORY", "amd", "gpu_memory"),
      new Override("AMD_FLEET_MAX_NODES", "amd", "fleet_max_nodes"),
      new Override("AMD_FLEET_IDLE_DURATION", "amd", "fleet_idle_duration"),
      new Override("AMD_SPOT_POLICY", "amd", "spot_policy"),
      new Override("AMD_FLEET_DRY_RUN", "amd", "fleet_dry_run"),
      new Override("EVENT_LOOPS", "runtime", "event_loops"),
      new Override("DSTACK_REQUEST_TIMEOUT_SECONDS", "dstack", "request_timeout_seconds"),
      new Override("DSTACK_POLL_INTERVAL_MS", "dstack", "poll_interval_ms"),
      new Override("DSTACK_PROVISIONING_TIMEOUT_SECONDS", "dstack", "provisioning_timeout_seconds"),
      new Override("DSTACK_NO_CAPACITY_RETRY_SECONDS", "dstack", "no_capacity_retry_seconds"),
      new Override("DSTACK_RETRY_BACKOFF_MS", "dstack", "retry_backoff_ms"),
      new Override("DSTACK_STOP_GRACE_SECONDS", "dstack", "stop_grace_seconds"),
      new Override("DSTACK_RUN_PREFIX", "dstack", "run_prefix"),
      new Override("DSTACK_TASK_TEMPLATE", "dstack", "task_template"),
      new Override("DSTACK_FLEET_TEMPLATE", "dstack", "fleet_template"),
      new Override("DSTACK_AGENT_DIR", "dstack", "agent_dir"),
      new Override("DSTACK_LOG_STORAGE", "dstack", "log_storage"),
      new Override("DSTACK_PROFILE_REPORT_MAX_MB", "dstack", "profile_report_max_mb"),
      new Override("DSTACK_WORKER_MODE", "dstack", "worker_mode"),
      new Override("DSTACK_WORKER_COMMAND", "dstack", "worker_command"),
      new Override("DSTACK_WORKER_TOKEN_IN_SPEC", "dstack", "worker_token_in_spec"),
      new Override("PUBLIC_URL", "http", "public_url"));

  private static final Pattern NAME = Pattern.compile("[A-Za-z0-9][A-Za-z0-9_.-]{0,62}");
  private static final Pattern GPU_MEMORY = Pattern.compile("[0-9]+(MB|GB|TB)");
  private static final Pattern DURATION = Pattern.compile("[0-9]+[smhd]");
  /** dstack run names are {@code [a-z][a-z0-9-]{1,40}}; the prefix leaves room for a submission id and attempt (see
   * {@code dev.kernelrunner.dstack.RunNames}). */
  private static final Pattern RUN_PREFIX = Pattern.compile("[a-z][a-z0-9]{0,3}-");
  private static final Set<String> SPOT_POLICIES = Set.of("auto", "spot", "on-demand");
  /** How the dstack server keeps job logs (server/services/logs/__init__.py:29-86); none: fluent-bit ship-only. */
  private static final Set<String> LOG_STORAGES = Set.of("auto", "file", "cloudwatch", "none");
  /** Logback's levels (conf/logback.xml reads LOG_LEVEL; an unknown one would silently mean DEBUG). */
  private static final List<String> LOG_LEVELS = List.of("TRACE", "DEBUG", "INFO", "WARN", "ERROR", "OFF");
  private static final Pattern USER_NAME = Pattern.compile("[a-z_][a-z0-9_-]{0,31}");
  private static final Pattern ENV_ENTRY = Pattern.compile("[A-Za-z_][A-Za-z0-9_]*(=.*)?");

  private final List<String> problems = new ArrayList<>();
  private final JsonObject root;
  private final Map<String, String> env;

  private ConfigLoader(JsonObject root, Map<String, String> env) {
    this.root = root;
    this.env = env;
  }

  /** Loads with the process environment. */
  public static AppConfig load() {
    return load(System.getenv());
  }

  public static AppConfig load(Map<String, String> env) {
    String file = env.get("CONFIG_FILE");
    JsonObject defaults;
    if (file != null && !file.isBlank()) {
      defaults = readFile(Path.of(file));
    } else if (Files.isRegularFile(Path.of("conf/application.json"))) {
      defaults = readFile(Path.of("conf/application.json"));
    } else {
      defaults = readBundled();
    }
    return new ConfigLoader(defaults, env).build();
  }

  private static JsonObject readFile(Path path) {
    try {
      return new JsonObject(Files.readString(path));
    } catch (IOException e) {
      throw new ConfigException(List.of("cannot read " + path + ": " + e.getMessage()));
    } catch (DecodeException e) {
      throw new ConfigException(List.of(path + " is not valid JSON: " + e.getMessage()));
    }
  }

  private static JsonObject readBundled() {
    try (InputStream in = ConfigLoader.class.getResourceAsStream("/application.json")) {
      if (in == null) {
        throw new ConfigException(List.of("no conf/application.json and none built into the jar"));
      }
      return new JsonObject(new String(in.readAllBytes(), StandardCharsets.UTF_8));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private AppConfig build() {
    for (Override o : OVERRIDES) {
      String value = env.get(o.env());
      if (value != null) {
        section(o.section()).put(o.key(), value);
      }
    }
    AppConfig.Http http = new AppConfig.Http(
        string("http", "host", false),
        integer("http", "port", 0, 65535),
        string("http", "admin_token", true),
        integer("http", "max_code_bytes", 1, 64 * 1024 * 1024),
        integer("http", "max_active_per_user", 1, 100_000),
        string("http", "metrics_token", true),
        Duration.ofSeconds(integer("http", "idle_timeout_seconds", 1, 86400)),
        Duration.ofSeconds(integer("http", "header_timeout_seconds", 1, 3600)),
        integer("http", "max_connections", 1, 1_000_000),
        integer("http", "max_connections_per_address", 1, 1_000_000));
    String url = string("database", "url", true);
    if (url != null && !(url.startsWith("postgresql://") || url.startsWith("postgres://"))) {
      problems.add("DATABASE_URL (database.url) must look like postgresql://user:password@host:port/db");
    }
    AppConfig.Database database = new AppConfig.Database(
        url, Path.of(string("database", "data_dir", false)), integer("database", "pool_size", 1, 200),
        Duration.ofSeconds(integer("database", "event_write_retry_seconds", 1, 86400)));
    AppConfig.Sse sse = new AppConfig.Sse(
        Duration.ofSeconds(integer("sse", "heartbeat_seconds", 1, 3600)),
        Duration.ofSeconds(integer("sse", "disconnect_grace_seconds", 0, 86400)),
        integer("sse", "max_pending_bytes", 1024, 1 << 30),
        integer("sse", "max_streams_per_user", 1, 1_000_000));
    if (http.idleTimeout().compareTo(sse.heartbeat()) <= 0) {
      problems.add("HTTP_IDLE_TIMEOUT_SECONDS (http.idle_timeout_seconds) must be longer than SSE_HEARTBEAT_SECONDS"
          + " (sse.heartbeat_seconds), or idle streams would be cut");
    }
    JsonObject limits = section("agent").getJsonObject("limits", new JsonObject());
    section("agent").put("limits", limits);
    AppConfig.Agent agent = new AppConfig.Agent(
        commandLine("AGENT_COMMAND (agent.command)", string("agent", "command", false)),
        Path.of(string("agent", "workdir", false)),
        Path.of(string("agent", "problems_dir", false)),
        Duration.ofSeconds(integer("agent", "submission_timeout_seconds", 1, 7 * 86400)),
        Duration.ofSeconds(integer("agent", "kill_grace_seconds", 0, 600)),
        integer("agent", "log_tail_lines", 1, 10_000),
        new AppConfig.Limits(
            integer(limits, "agent.limits", "compile_seconds", 1, 86400),
            integer(limits, "agent.limits", "test_seconds", 1, 86400),
            integer(limits, "agent.limits", "benchmark_seconds", 1, 86400)),
        matching("agent", "user", USER_NAME, "a system user name (not root)"),
        agentEnv(string("agent", "env", true)),
        Duration.ofHours(integer("agent", "runs_retention_hours", 0, 24 * 365)),
        integer("agent", "review_speedup", 2, 1_000_000),
        Path.of(string("agent", "baselines_dir", false)));
    if ("root".equals(agent.user())) {
      problems.add("AGENT_USER (agent.user) must not be root: agents run user code");
    }
    List<String> gpuTypes = gpuTypeList("LOCAL_GPU_TYPES", "local");
    AppConfig.Local local = new AppConfig.Local(gpuTypes, integer("local", "max_concurrent", 1, 1024),
        bool("local", "workers"), string("local", "worker_command", false));
    List<String> workerTypes = gpuTypeList("WORKER_GPU_TYPES", "workers");
    for (String type : workerTypes) {
      if (gpuTypes.contains(type)) {
        problems.add("WORKER_GPU_TYPES (workers.gpu_types): '" + type + "' is already served locally (LOCAL_GPU_TYPES)");
      }
    }
    AppConfig.Workers workers = new AppConfig.Workers(workerTypes,
        Duration.ofSeconds(integer("workers", "lost_after_seconds", 1, 86400)),
        Duration.ofSeconds(integer("workers", "check_every_seconds", 1, 86400)));
    AppConfig.Amd amd = new AppConfig.Amd(
        matching("amd", "backend", NAME, "a dstack backend name"),
        matching("amd", "fleet_name", NAME, "a fleet name of letters, digits, '-', '_' or '.'"),
        matching("amd", "gpu_type", NAME, "a GPU type name such as MI300X"),
        matching("amd", "gpu_memory", GPU_MEMORY, "a size such as 192GB"),
        integer("amd", "fleet_max_nodes", 1, 1024),
        matching("amd", "fleet_idle_duration", DURATION, "a duration such as 10m (s, m, h or d)"),
        oneOf("amd", "spot_policy", SPOT_POLICIES),
        bool("amd", "fleet_dry_run"));
    DstackConnection connection = DstackConnection.resolve(env, problems);
    AppConfig.Dstack dstack = new AppConfig.Dstack(
        connection.url(), connection.token(), connection.project(), connection.source(),
        Duration.ofSeconds(integer("dstack", "request_timeout_seconds", 1, 3600)),
        Duration.ofMillis(integer("dstack", "poll_interval_ms", 50, 600_000)),
        Duration.ofSeconds(integer("dstack", "provisioning_timeout_seconds", 1, 86400)),
        Duration.ofSeconds(integer("dstack", "no_capacity_retry_seconds", 0, 86400)),
        Duration.ofMillis(integer("dstack", "retry_backoff_ms", 10, 3_600_000)),
        Duration.ofSeconds(integer("dstack", "stop_grace_seconds", 0, 3600)),
        matching("dstack", "run_prefix", RUN_PREFIX, "1 to 4 lowercase letters or digits (starting with a letter) and '-'"),
        Path.of(string("dstack", "task_template", false)),
        Path.of(string("dstack", "fleet_template", false)),
        Path.of(string("dstack", "agent_dir", false)),
        oneOf("dstack", "log_storage", LOG_STORAGES),
        integer("dstack", "profile_report_max_mb", 1, 48) * 1024 * 1024);
    // Read by logback itself (conf/logback.xml); checked here so that a typo is not silence.
    String logFormat = env.getOrDefault("LOG_FORMAT", "text");
    if (!Set.of("text", "json").contains(logFormat)) {
      problems.add("LOG_FORMAT must be text or json, got '" + logFormat + "'");
    }
    String logLevel = env.getOrDefault("LOG_LEVEL", "INFO");
    if (!LOG_LEVELS.contains(logLevel.toUpperCase())) {
      problems.add("LOG_LEVEL must be one of " + LOG_LEVELS + ", got '" + logLevel + "'");
    }
    // 0: one loop per two cores (what the load benchmark measured best on two), at least one.
    int eventLoops = integer("runtime", "event_loops", 0, 1024);
    AppConfig.Runtime runtime = new AppConfig.Runtime(eventLoops > 0 ? eventLoops
        : Math.max(1, java.lang.Runtime.getRuntime().availableProcessors() / 2));
    AppConfig.Quotas quotas = new AppConfig.Quotas(integer("quotas", "submissions_per_hour", 0, 10_000_000),
        integer("quotas", "gpu_seconds_per_day", 0, 1_000_000_000));
    AppConfig.DstackWorkers dstackWorkers = dstackWorkers(amd);
    if (!problems.isEmpty()) {
      throw new ConfigException(problems);
    }
    return new AppConfig(http, database, sse, agent, local, workers, amd, dstack, runtime, quotas, dstackWorkers);
  }

  /** DSTACK_WORKER_MODE and what persistent worker runs need: PUBLIC_URL, the worker's command, the idle stop. */
  private AppConfig.DstackWorkers dstackWorkers(AppConfig.Amd amd) {
    String mode = string("dstack", "worker_mode", false);
    if (!Set.of("per-submission", "persistent").contains(mode)) {
      problems.add("DSTACK_WORKER_MODE (dstack.worker_mode) must be per-submission or persistent, got '" + mode + "'");
    }
    boolean persistent = "persistent".equals(mode);
    String publicUrl = string("http", "public_url", true);
    if (persistent && (publicUrl == null || !publicUrl.matches("https?://[^\\s/]+(/\\S*)?"))) {
      problems.add("PUBLIC_URL (http.public_url) must be the service's http(s) URL as GPU machines reach it, "
          + "with DSTACK_WORKER_MODE=persistent (got '" + publicUrl + "')");
    }
    String command = string("dstack", "worker_command", false);
    // AMD_FLEET_IDLE_DURATION, checked with the AMD_* settings against DURATION (such as 10m), as a Duration.
    String idle = amd.fleetIdleDuration();
    Duration idleAfter = null;
    if (DURATION.matcher(idle).matches()) {
      long n = Long.parseLong(idle.substring(0, idle.length() - 1));
      idleAfter = switch (idle.charAt(idle.length() - 1)) {
        case 'm' -> Duration.ofMinutes(n);
        case 'h' -> Duration.ofHours(n);
        case 'd' -> Duration.ofDays(n);
        default -> Duration.ofSeconds(n);
      };
    }
    return new AppConfig.DstackWorkers(persistent, publicUrl == null ? null : publicUrl.replaceAll("/+$", ""),
        command, idleAfter, bool("dstack", "worker_token_in_spec"));
  }

  /** A comma list of GPU type names ({@code section.gpu_types}); a bad name is a problem naming the variable. */
  private List<String> gpuTypeList(String variable, String section) {
    String value = string(section, "gpu_types", true);
    List<String> types = Arrays.stream(value == null ? new String[0] : value.split(","))
        .map(String::trim).filter(s -> !s.isEmpty()).toList();
    for (String type : types) {
      if (!NAME.matcher(type).matches()) {
        problems.add(variable + " (" + section + ".gpu_types): '" + type + "' is not a valid GPU type name");
      }
    }
    return types;
  }

  /** Splits a command line into argv: whitespace separates, single or double quotes group. No shell. */
  static List<String> splitCommand(String line) {
    List<String> argv = new ArrayList<>();
    StringBuilder current = new StringBuilder();
    boolean inToken = false;
    char quote = 0;
    for (int i = 0; i < line.length(); i++) {
      char c = line.charAt(i);
      if (quote != 0) {
        if (c == quote) {
          quote = 0;
        } else {
          current.append(c);
        }
      } else if (c == '\'' || c == '"') {
        quote = c;
        inToken = true;
      } else if (Character.isWhitespace(c)) {
        if (inToken) {
          argv.add(current.toString());
          current.setLength(0);
          inToken = false;
        }
      } else {
        current.append(c);
        inToken = true;
      }
    }
    if (quote != 0) {
      throw new IllegalArgumentException("unterminated quote");
    }
    if (inToken) {
      argv.add(current.toString());
    }
    return argv;
  }

  private List<String> commandLine(String label, String line) {
    try {
      List<String> argv = splitCommand(line);
      if (argv.isEmpty()) {
        problems.add(label + " is empty");
      }
      return argv;
    } catch (IllegalArgumentException e) {
      problems.add(label + ": " + e.getMessage());
      return List.of();
    }
  }

  /** {@code AGENT_ENV}: comma-separated {@code NAME} or {@code NAME=value} entries. */
  private List<String> agentEnv(String line) {
    if (line == null) {
      return List.of();
    }
    List<String> entries = Arrays.stream(line.split(",")).map(String::trim).filter(s -> !s.isEmpty()).toList();
    for (String entry : entries) {
      if (!ENV_ENTRY.matcher(entry).matches()) {
        problems.add("AGENT_ENV (agent.env): '" + entry + "' is not NAME or NAME=value");
      }
    }
    return entries;
  }

  private JsonObject section(String name) {
    JsonObject section = root.getJsonObject(name);
    if (section == null) {
      section = new JsonObject();
      root.put(name, section);
    }
    return section;
  }

  private String label(String path, String key) {
    String dotted = path + "." + key;
    for (Override o : OVERRIDES) {
      if ((o.section() + "." + o.key()).equals(dotted)) {
        return o.env() + " (" + dotted + ")";
      }
    }
    return dotted;
  }

  private String string(String section, String key, boolean nullable) {
    Object value = section(section).getValue(key);
    if (value == null || (value instanceof String s && s.isBlank())) {
      if (!nullable) {
        problems.add(label(section, key) + " is required");
        return "";
      }
      return null;
    }
    return value.toString().trim();
  }

  private int integer(String section, String key, int min, int max) {
    return integer(section(section), section, key, min, max);
  }

  private int integer(JsonObject object, String path, String key, int min, int max) {
    Object value = object.getValue(key);
    int parsed;
    try {
      parsed = value instanceof Number n ? n.intValue() : Integer.parseInt(String.valueOf(value).trim());
    } catch (NumberFormatException e) {
      problems.add(label(path, key) + " must be a whole number, got '" + value + "'");
      return min;
    }
    if (parsed < min || parsed > max) {
      problems.add(label(path, key) + " must be between " + min + " and " + max + ", got " + parsed);
    }
    return parsed;
  }

  private boolean bool(String section, String key) {
    String value = String.valueOf(section(section).getValue(key)).trim().toLowerCase();
    if (!value.equals("true") && !value.equals("false")) {
      problems.add(label(section, key) + " must be true or false, got '" + value + "'");
    }
    return value.equals("true");
  }

  private String matching(String section, String key, Pattern pattern, String what) {
    String value = string(section, key, false);
    if (!value.isEmpty() && !pattern.matcher(value).matches()) {
      problems.add(label(section, key) + " must be " + what + ", got '" + value + "'");
    }
    return value;
  }

  private String oneOf(String section, String key, Set<String> allowed) {
    String value = string(section, key, false);
    if (!allowed.contains(value)) {
      problems.add(label(section, key) + " must be one of " + allowed + ", got '" + value + "'");
    }
    return value;
  }
}
