package dev.kernelrunner.supervisor;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.kernelrunner.support.TempDirs;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class AgentSandboxTest {
  @Test
  void theEnvironmentIsBuiltFromNothingButTheToolchainAndWhatAgentEnvNames() {
    Map<String, String> service = Map.of("PATH", "/usr/bin", "CUDA_HOME", "/usr/local/cuda",
        "ADMIN_TOKEN", "secret", "DATABASE_URL", "postgresql://u:p@h/db", "DSTACK_TOKEN", "secret",
        "HOME", "/root", "CUSTOM", "passed");
    Map<String, String> env = AgentSandbox.environment(List.of("CUSTOM", "FIXED=value", "ABSENT"), service);
    assertEquals("/usr/bin", env.get("PATH"));
    assertEquals("/usr/local/cuda", env.get("CUDA_HOME"));
    assertEquals("passed", env.get("CUSTOM"));
    assertEquals("value", env.get("FIXED"));
    for (String secret : List.of("ADMIN_TOKEN", "DATABASE_URL", "DSTACK_TOKEN", "HOME", "ABSENT")) {
      assertFalse(env.containsKey(secret), secret);
    }
  }

  @Test
  void withoutAPathTheSystemOneIsUsed() {
    assertTrue(AgentSandbox.environment(List.of(), Map.of()).get("PATH").contains("/usr/bin"));
  }

  @Test
  void aFolderIsReachableByOthersOnlyIfEveryFolderAboveLetsThemPass() throws Exception {
    Path open = TempDirs.directory("open");
    Files.setPosixFilePermissions(open, PosixFilePermissions.fromString("rwxr-xr-x"));
    Path inner = Files.createDirectories(open.resolve("bin"));
    Files.setPosixFilePermissions(inner, PosixFilePermissions.fromString("rwxr-xr-x"));
    assertTrue(AgentSandbox.reachableByOthers(inner.toString()));
    Files.setPosixFilePermissions(open, PosixFilePermissions.fromString("rwx------"));
    assertFalse(AgentSandbox.reachableByOthers(inner.toString()), "a private folder above it");
    assertFalse(AgentSandbox.reachableByOthers("relative/bin"));
    assertFalse(AgentSandbox.reachableByOthers(open.resolve("missing").toString()));
  }
}
