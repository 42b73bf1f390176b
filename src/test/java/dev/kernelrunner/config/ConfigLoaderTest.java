package dev.kernelrunner.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.kernelrunner.support.TempDirs;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class ConfigLoaderTest {

  @Test
  void defaultsComeFromApplicationJson() {
    AppConfig config = ConfigLoader.load(Map.of());
    assertEquals(8080, config.http().port());
    assertNull(config.database().url());
    assertEquals(Path.of("./data"), config.database().dataDir());
    assertNull(config.http().adminToken());
    assertEquals(List.of("python3", "-m", "remote_agent"), config.agent().command());
    assertEquals(Path.of("remote-agent"), config.agent().workdir());
    assertEquals(List.of("local"), config.local().gpuTypes());
    assertEquals(1, config.local().maxConcurrent());
    assertTrue(config.local().viaWorkers(), "this host's GPUs are served by local workers by default");
    assertEquals("worker", config.gpuTypes().get("local").backend());
    assertEquals(Duration.ofSeconds(30), config.sse().disconnectGrace());
    assertEquals(Duration.ofSeconds(15), config.sse().heartbeat());
    assertEquals(262144, config.http().maxCodeBytes());
    assertEquals(4, config.http().maxActivePerUser());
    assertEquals("MI300X", config.amd().gpuType());
    assertEquals("amd-mi300x-fleet", config.amd().fleetName());
    assertEquals("192GB", config.amd().gpuMemory());
    assertFalse(config.amd().fleetDryRun());
    assertEquals(1048576, config.sse().maxPendingBytes());
    assertEquals(Math.max(1, Runtime.getRuntime().availableProcessors() / 2), config.runtime().eventLoops());
    assertEquals(10, config.agent().reviewSpeedup());
  }

  @Test
  void environmentOverridesEverySetting() {
    AppConfig config = ConfigLoader.load(Map.ofEntries(
        Map.entry("HTTP_PORT", "9090"),
        Map.entry("DATABASE_URL", "postgresql://u:p@db:5432/kr"),
        Map.entry("DATA_DIR", "/var/lib/kr"),
        Map.entry("ADMIN_TOKEN", "secret"),
        Map.entry("AGENT_COMMAND", "/opt/agent --flag 'two words' \"and more\""),
        Map.entry("LOCAL_GPU_TYPES", "H100, A100 ,"),
        Map.entry("LOCAL_MAX_CONCURRENT", "3"),
        Map.entry("LOCAL_WORKERS", "false"),
        Map.entry("DISCONNECT_GRACE_SECONDS", "5"),
        Map.entry("SSE_HEARTBEAT_SECONDS", "2"),
        Map.entry("MAX_CODE_BYTES", "1000"),
        Map.entry("MAX_ACTIVE_PER_USER", "9"),
        Map.entry("AMD_GPU_TYPE", "MI325X"),
        Map.entry("AMD_FLEET_MAX_NODES", "4"),
        Map.entry("AMD_FLEET_DRY_RUN", "true"),
        Map.entry("AMD_SPOT_POLICY", "on-demand"),
        Map.entry("SSE_MAX_PENDING_BYTES", "65536"),
        Map.entry("EVENT_LOOPS", "3"),
        Map.entry("REVIEW_SPEEDUP", "50")));
    assertEquals(9090, config.http().port());
    assertEquals("postgresql://u:p@db:5432/kr", config.database().url());
    assertEquals("secret", config.http().adminToken());
    assertEquals(List.of("/opt/agent", "--flag", "two words", "and more"), config.agent().command());
    assertEquals(List.of("H100", "A100"), config.local().gpuTypes());
    assertEquals(3, config.local().maxConcurrent());
    assertEquals(Duration.ofSeconds(5), config.sse().disconnectGrace());
    assertEquals(9, config.http().maxActivePerUser());
    assertTrue(config.amd().fleetDryRun());
    assertEquals("on-demand", config.amd().spotPolicy());
    assertEquals(65536, config.sse().maxPendingBytes());
    assertEquals(3, config.runtime().eventLoops());
    assertEquals(50, config.agent().reviewSpeedup());
    assertEquals(Map.of("H100", new AppConfig.GpuType("H100", "local", 3),
        "A100", new AppConfig.GpuType("A100", "local", 3),
        "MI325X", new AppConfig.GpuType("MI325X", "dstack", 4)), config.gpuTypes());
  }

  @Test
  void invalidValuesAreAllReportedByName() {
    ConfigException error = assertThrows(ConfigException.class, () -> ConfigLoader.load(Map.ofEntries(
        Map.entry("HTTP_PORT", "eighty"),
        Map.entry("LOCAL_MAX_CONCURRENT", "0"),
        Map.entry("DATABASE_URL", "mysql://x"),
        Map.entry("AMD_GPU_MEMORY", "lots"),
        Map.entry("AMD_SPOT_POLICY", "cheap"),
        Map.entry("AMD_FLEET_IDLE_DURATION", "10 minutes"),
        Map.entry("AMD_FLEET_DRY_RUN", "maybe"),
        Map.entry("AGENT_COMMAND", "python3 'unterminated"),
        Map.entry("LOCAL_GPU_TYPES", "ok,bad type"),
        Map.entry("DSTACK_RUN_PREFIX", "Kernel_Runner-"),
        Map.entry("DSTACK_POLL_INTERVAL_MS", "5"),
        Map.entry("SSE_MAX_PENDING_BYTES", "10"),
        Map.entry("EVENT_LOOPS", "many"),
        Map.entry("REVIEW_SPEEDUP", "1"),
        Map.entry("DSTACK_LOG_STORAGE", "elasticsearch"),
        Map.entry("DSTACK_PROFILE_REPORT_MAX_MB", "64"))));
    assertNamesEach(error, "HTTP_PORT", "LOCAL_MAX_CONCURRENT", "DATABASE_URL", "AMD_GPU_MEMORY",
        "AMD_SPOT_POLICY", "AMD_FLEET_IDLE_DURATION", "AMD_FLEET_DRY_RUN", "AGENT_COMMAND", "LOCAL_GPU_TYPES",
        "DSTACK_RUN_PREFIX", "DSTACK_POLL_INTERVAL_MS", "SSE_MAX_PENDING_BYTES", "EVENT_LOOPS", "REVIEW_SPEEDUP",
        "DSTACK_LOG_STORAGE", "DSTACK_PROFILE_REPORT_MAX_MB");
    assertEquals(16, error.problems().size(), error.getMessage());
  }

  @Test
  void workerGpuTypesAreServedByWorkersAndCheckedLikeTheOthers() {
    AppConfig config = ConfigLoader.load(Map.of("WORKER_GPU_TYPES", "H200, L40S", "WORKER_LOST_SECONDS", "45"));
    assertEquals(List.of("H200", "L40S"), config.workers().gpuTypes());
    assertEquals(Duration.ofSeconds(45), config.workers().lostAfter());
    assertEquals(new AppConfig.GpuType("H200", "worker", 0), config.gpuTypes().get("H200"));
    ConfigException error = assertThrows(ConfigException.class, () -> ConfigLoader.load(Map.of(
        "WORKER_GPU_TYPES", "local,bad type", "WORKER_LOST_SECONDS", "0")));
    assertNamesEach(error, "WORKER_GPU_TYPES", "WORKER_LOST_SECONDS");
    assertEquals(3, error.problems().size(), error.getMessage()); // a bad name, a type served locally, the 0
  }

  @Test
  void hardeningSettingsAreCheckedToo() {
    ConfigException error = assertThrows(ConfigException.class, () -> ConfigLoader.load(Map.ofEntries(
        Map.entry("LOG_LEVEL", "LOUD"),
        Map.entry("AGENT_USER", "root"),
        Map.entry("AGENT_ENV", "GOOD,bad name"),
        Map.entry("HTTP_IDLE_TIMEOUT_SECONDS", "10"),
        Map.entry("SSE_HEARTBEAT_SECONDS", "15"),
        Map.entry("HTTP_MAX_CONNECTIONS_PER_ADDRESS", "0"),
        Map.entry("EVENT_WRITE_RETRY_SECONDS", "0"))));
    assertNamesEach(error, "LOG_LEVEL", "AGENT_USER", "AGENT_ENV", "HTTP_IDLE_TIMEOUT_SECONDS",
        "HTTP_MAX_CONNECTIONS_PER_ADDRESS", "EVENT_WRITE_RETRY_SECONDS");
    AppConfig config = ConfigLoader.load(Map.of("LOG_LEVEL", "debug", "AGENT_ENV", "CUDA_HOME,FOO=bar baz"));
    assertEquals(List.of("CUDA_HOME", "FOO=bar baz"), config.agent().env());
    assertEquals(100, config.sse().maxStreamsPerUser());
    assertEquals("kernel-runner-agent", config.agent().user());
  }

  @Test
  void persistentDstackWorkersNeedAPublicUrlAndServeTheDstackTypeByWorkers() {
    assertEquals("dstack", ConfigLoader.load(Map.of()).gpuTypes().get("MI300X").backend());
    AppConfig config = ConfigLoader.load(Map.of("DSTACK_WORKER_MODE", "persistent",
        "PUBLIC_URL", "https://runner.example.org/", "AMD_FLEET_IDLE_DURATION", "5m",
        "QUOTA_SUBMISSIONS_PER_HOUR", "7", "QUOTA_GPU_SECONDS_PER_DAY", "0"));
    assertEquals(new AppConfig.GpuType("MI300X", "worker", 0), config.gpuTypes().get("MI300X"));
    assertEquals(new AppConfig.DstackWorkers(true, "https://runner.example.org", "python3 -m remote_agent worker",
        Duration.ofMinutes(5), false), config.dstackWorkers());
    assertEquals(new AppConfig.Quotas(7, 0), config.quotas());
    ConfigException error = assertThrows(ConfigException.class, () -> ConfigLoader.load(Map.of(
        "DSTACK_WORKER_MODE", "sometimes", "QUOTA_SUBMISSIONS_PER_HOUR", "-1")));
    assertNamesEach(error, "DSTACK_WORKER_MODE", "QUOTA_SUBMISSIONS_PER_HOUR");
    ConfigException noUrl = assertThrows(ConfigException.class, () -> ConfigLoader.load(Map.of(
        "DSTACK_WORKER_MODE", "persistent")));
    assertNamesEach(noUrl, "PUBLIC_URL");
  }

  @Test
  void localTypesWinOverTheDstackType() {
    AppConfig config = ConfigLoader.load(Map.of("LOCAL_GPU_TYPES", "MI300X"));
    assertEquals("worker", config.gpuTypes().get("MI300X").backend());
    AppConfig children = ConfigLoader.load(Map.of("LOCAL_GPU_TYPES", "MI300X", "LOCAL_WORKERS", "false"));
    assertEquals("local", children.gpuTypes().get("MI300X").backend());
  }

  @Test
  void theDstackServerComesFromTheEnvironmentOrDstacksOwnConfigFile() throws Exception {
    Path home = TempDirs.directory("home");
    AppConfig none = ConfigLoader.load(Map.of("HOME", home.toString()));
    assertFalse(none.dstack().configured());
    AppConfig env = ConfigLoader.load(Map.of("HOME", home.toString(), "DSTACK_SERVER_URL", "https://d.example/",
        "DSTACK_TOKEN", "secret-token", "DSTACK_PROJECT", "main"));
    assertEquals("https://d.example", env.dstack().serverUrl());
    assertEquals("main", env.dstack().project());
    assertFalse(env.dstack().toString().contains("secret-token"), "the token never reaches a log line");
    ConfigException partial = assertThrows(ConfigException.class, () -> ConfigLoader.load(Map.of(
        "HOME", home.toString(), "DSTACK_SERVER_URL", "https://d.example")));
    assertTrue(partial.getMessage().contains("go together"), partial.getMessage());
    java.nio.file.Files.createDirectories(home.resolve(".dstack"));
    java.nio.file.Files.writeString(home.resolve(".dstack/config.yml"), "projects:\n- default: false\n  name: a\n"
        + "  token: ta\n  url: http://a:3000\n- default: true\n  name: b\n  token: tb\n  url: http://b:3000\n"
        + "repos: []\n");
    AppConfig file = ConfigLoader.load(Map.of("HOME", home.toString()));
    assertEquals(List.of("http://b:3000", "tb", "b"), List.of(file.dstack().serverUrl(), file.dstack().token(),
        file.dstack().project()), "the default project");
    AppConfig named = ConfigLoader.load(Map.of("HOME", home.toString(), "DSTACK_PROJECT", "a"));
    assertEquals("http://a:3000", named.dstack().serverUrl(), "DSTACK_PROJECT picks one");
    ConfigException missing = assertThrows(ConfigException.class, () -> ConfigLoader.load(Map.of(
        "HOME", home.toString(), "DSTACK_PROJECT", "zzz")));
    assertTrue(missing.getMessage().contains("no project named zzz"), missing.getMessage());
    // DSTACK_TOKEN alone overrides the config file's token, as dstack's own client does (api_client.py:37-39).
    AppConfig override = ConfigLoader.load(Map.of("HOME", home.toString(), "DSTACK_TOKEN", "tx"));
    assertEquals(List.of("http://b:3000", "tx", "b"), List.of(override.dstack().serverUrl(), override.dstack().token(),
        override.dstack().project()));
    ConfigException noProject = assertThrows(ConfigException.class, () -> ConfigLoader.load(Map.of(
        "HOME", home.toString(), "DSTACK_SERVER_URL", "https://d.example", "DSTACK_TOKEN", "t")));
    assertTrue(noProject.getMessage().contains("DSTACK_PROJECT"), noProject.getMessage());
  }

  private static void assertNamesEach(ConfigException error, String... names) {
    for (String name : names) {
      assertTrue(error.getMessage().contains(name), name + " missing from: " + error.getMessage());
    }
  }
}
