package dev.kernelrunner.dstack;

import java.util.Random;
import java.util.regex.Pattern;

/**
 * dstack run names for submissions: {@code <prefix><submission id, 32 hex>-<3 random>}, unique per attempt and
 * always valid: dstack takes only {@code ^[a-z][a-z0-9-]{1,40}$} (core/services/__init__.py:6-12), so with the
 * longest prefix the configuration allows (5 characters) a name is 41 characters.
 */
final class RunNames {
  static final Pattern VALID = Pattern.compile("^[a-z][a-z0-9-]{1,40}$");
  private static final String ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789";
  private final String prefix;
  private final Random random;

  RunNames(String prefix, Random random) {
    this.prefix = prefix;
    this.random = random;
  }

  String next(String submissionId) {
    StringBuilder name = new StringBuilder(prefix).append(submissionId.replace("-", "").toLowerCase()).append('-');
    for (int i = 0; i < 3; i++) {
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
