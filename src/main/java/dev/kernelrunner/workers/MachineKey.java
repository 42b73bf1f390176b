package dev.kernelrunner.workers;

import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.util.Base64;
import java.util.HexFormat;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * A worker machine's key (pure): 32 random bytes or more that the worker keeps on its machine and sends once, when it
 * enrolls with its token; the token is bound to it. Each job stream then opens with a proof,
 * {@code <unix seconds>.<hex HMAC-SHA256(key, "connect\n" + worker id + "\n" + seconds)>}, fresh within
 * {@link #SKEW_SECONDS}: a copy of the token alone opens nothing. remote-agent/remote_agent/gpu_worker.py makes the
 * same proof (a shared test vector checks both).
 */
public final class MachineKey {
  /** How far a proof's time may be from the service's clock. */
  public static final long SKEW_SECONDS = 300;
  static final int MIN_BYTES = 32;

  private final byte[] key;

  private MachineKey(byte[] key) {
    this.key = key.clone();
  }

  /** The key from its base64 text; null when it is not one (not base64, or shorter than 32 bytes). */
  public static MachineKey parse(String base64) {
    if (base64 == null || base64.length() > 1024) {
      return null;
    }
    try {
      byte[] bytes = Base64.getDecoder().decode(base64);
      return bytes.length < MIN_BYTES ? null : new MachineKey(bytes);
    } catch (IllegalArgumentException e) {
      return null;
    }
  }

  public String base64() {
    return Base64.getEncoder().encodeToString(key);
  }

  /** What the admin and the worker's log show of it: the first 16 hex digits of its SHA-256. */
  public String fingerprint() {
    try {
      return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(key)).substring(0, 16);
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException(e);
    }
  }

  /** The proof a worker with this key sends when {@code workerId} opens its stream at {@code seconds}. */
  public String proof(String workerId, long seconds) {
    try {
      Mac mac = Mac.getInstance("HmacSHA256");
      mac.init(new SecretKeySpec(key, "HmacSHA256"));
      byte[] sum = mac.doFinal(("connect\n" + workerId + "\n" + seconds).getBytes(StandardCharsets.UTF_8));
      return seconds + "." + HexFormat.of().formatHex(sum);
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException(e);
    }
  }

  /** Whether {@code presented} is this key's proof for {@code workerId}, made within the skew of {@code now}. */
  public boolean proves(String presented, String workerId, long now) {
    if (presented == null) {
      return false;
    }
    int dot = presented.indexOf('.');
    long seconds;
    try {
      seconds = Long.parseLong(presented.substring(0, Math.max(dot, 0)));
    } catch (NumberFormatException e) {
      return false;
    }
    return Math.abs(now - seconds) <= SKEW_SECONDS && MessageDigest.isEqual(
        proof(workerId, seconds).getBytes(StandardCharsets.UTF_8), presented.getBytes(StandardCharsets.UTF_8));
  }
}
