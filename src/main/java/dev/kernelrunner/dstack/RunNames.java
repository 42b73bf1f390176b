package dev.kernelrunner.dstack;

import java.util.Random;
import java.util.regex.Pattern;

/**
 * dstack run names for submissions: {@code <prefix><submission id, 32 hex>-<3 random>}, unique per attempt and
 * always valid: dstack takes only {@code ^[a-z][a-z0-9-]{1,40}$} (core/services/__init__.py:6-12), so with the
 * longest prefix the configuration allows (5 characters) a name is 41 characters. Worker runs (persistent mode)
 * are {@code <prefix>w-<8 random>}: never taken for a submission's by the orphan sweep (their length differs).
 */
public final class RunNames {
  static final Pattern VALID = Pattern.compile("^[a-z][a-z0-9-]{1,40}$");
  private static final String ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789";
  private final String prefix;
  private final Random random;

  public RunNames(String prefix, Random random) {
    this.prefix = prefix;
    this.random = random;
  }

  String next(String submissionId) {
    return random(prefix + submissionId.replace("-", "").toLowerCase() + "-", 3);
  }

  /** A new worker run's name. */
  public String nextWorker() {
    return random(prefix + "w-", 8);
  }

  /** Whether {@code name} is one of our worker runs. */
  public boolean isWorker(String name) {
    return name.startsWith(prefix + "w-") && name.length() == prefix.length() + 10;
  }

  private String random(String start, int count) {
    StringBuilder name = new StringBuilder(start);
    for (int i = 0; i < count; i++) {
      name.append(ALPHABET.charAt(random.nextInt(ALPHABET.length())));
    }
    if (!VALID.matcher(name).matches()) {
      throw new IllegalStateException("not a valid dstack run name: " + name);
    }
    return name.toString();
  }

  /** Whether {@code name} is one of ours (for the orphan sweep). */
  boolean isOurs(String name) {
    return name.startsWith(prefix) && name.length() == prefix.length() + 36;
  }
}
