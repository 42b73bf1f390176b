package dev.kernelrunner.model;

import java.util.Optional;

/**
 * {@code check} runs the tests; {@code benchmark} runs them, then times the kernel; {@code profile} runs them, then
 * the kernel once per test under the vendor's profiler (Nsight Compute, rocprofv3). {@code baseline} is no user's:
 * a job an admin starts that times the problem's PyTorch reference, eager and under torch.compile, on the GPU type
 * (remote-agent/remote_agent/baseline.py); it has no code.
 */
public enum Mode {
  CHECK, BENCHMARK, PROFILE, BASELINE;

  public String wire() {
    return name().toLowerCase();
  }

  /** Whether a user may submit code in this mode. */
  public boolean submittable() {
    return this != BASELINE;
  }

  public static Optional<Mode> parse(String value) {
    for (Mode mode : values()) {
      if (mode.wire().equals(value)) {
        return Optional.of(mode);
      }
    }
    return Optional.empty();
  }
}
