package dev.kernelrunner.model;

import java.util.Optional;

/**
 * {@code check} runs the tests; {@code benchmark} runs them, then times the kernel; {@code profile} runs them, then
 * the kernel once per test under the vendor's profiler (Nsight Compute, rocprofv3).
 */
public enum Mode {
  CHECK, BENCHMARK, PROFILE;

  public String wire() {
    return name().toLowerCase();
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
