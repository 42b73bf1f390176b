package dev.kernelrunner.support;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/** The real pull worker (remote_agent's) started for a test service, and stopped as a lost machine would be. */
public final class PullWorkers {
  private PullWorkers() {}

  /**
   * A worker of {@code gpuType} named {@code host}, serving {@code service} on {@code port} with {@code token};
   * with {@code fakeAgent}, its jobs run the test agent (else the real one). Its log goes to a temporary file.
   */
  public static Process start(TestService service, int port, String token, String gpuType, String host,
                              boolean fakeAgent) throws IOException {
    List<String> argv = new ArrayList<>(List.of("python3", "-m", "remote_agent", "worker",
        "--server", "http://127.0.0.1:" + port, "--gpu-type", gpuType, "--host", host));
    if (fakeAgent) {
      argv.addAll(List.of("--job-command", "python3 " + TestService.FAKE_AGENT));
    }
    ProcessBuilder builder = new ProcessBuilder(argv)
        .directory(Path.of("remote-agent").toFile()).redirectErrorStream(true)
        .redirectOutput(TempDirs.file("worker-" + host, ".log").toFile());
    builder.environment().put("KERNEL_RUNNER_WORKER_TOKEN", token);
    builder.environment().put("FAKE_AGENT_ECHO_DIR", service.dataDir().toString());
    return builder.start();
  }

  /** The worker and every process it started (its jobs run in sessions of their own), killed at once. */
  public static void killTree(Process process) throws InterruptedException {
    List<ProcessHandle> all = new ArrayList<>(process.descendants().toList());
    process.destroyForcibly();
    all.forEach(ProcessHandle::destroyForcibly);
    process.waitFor(10, TimeUnit.SECONDS);
  }
}
