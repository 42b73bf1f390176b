package dev.kernelrunner.config;

import java.util.List;

/** Configuration that cannot be used; names every offending setting. */
public class ConfigException extends RuntimeException {
  private final List<String> problems;

  public ConfigException(List<String> problems) {
    super("invalid configuration:\n  - " + String.join("\n  - ", problems));
    this.problems = List.copyOf(problems);
  }

  public List<String> problems() {
    return problems;
  }
}
