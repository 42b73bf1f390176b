package dev.kernelrunner.store;

import dev.kernelrunner.config.AppConfig;
import io.vertx.core.json.JsonObject;

/**
 * What a user has used of each quota, against the limits (0: none), and what follows from it: which limit a
 * new submission would break, in words, and when to try again.
 */
public record QuotaUsage(Limits limits, long active, long lastHour, Double hourFreesIn, double gpuSeconds,
                         Double dayFreesIn) {

  /** Unfinished submissions, submissions per hour, GPU-seconds per 24 hours; 0 is no limit (not for active). */
  public record Limits(int maxActive, int perHour, int gpuSecondsPerDay) {
    /** No limit: an admin's baseline jobs. */
    public static final Limits NONE = new Limits(Integer.MAX_VALUE, 0, 0);

    /** The limits every user has (MAX_ACTIVE_PER_USER, QUOTA_*). */
    public static Limits of(AppConfig config) {
      return new Limits(config.http().maxActivePerUser(), config.quotas().submissionsPerHour(),
          config.quotas().gpuSecondsPerDay());
    }

    public static Limits of(JsonObject json) {
      return new Limits(json.getInteger("max_active"), json.getInteger("per_hour", 0),
          json.getInteger("gpu_seconds_per_day", 0));
    }

    public JsonObject toJson() {
      return new JsonObject().put("max_active", maxActive).put("per_hour", perHour)
          .put("gpu_seconds_per_day", gpuSecondsPerDay);
    }
  }

  /** The quota that refuses a new submission now ({@code toJson}'s name), or null. */
  public String refusedBy() {
    if (active >= limits.maxActive()) {
      return "max_active";
    }
    if (limits.perHour() > 0 && lastHour >= limits.perHour()) {
      return "submissions_per_hour";
    }
    if (limits.gpuSecondsPerDay() > 0 && gpuSeconds >= limits.gpuSecondsPerDay()) {
      return "gpu_seconds_per_day";
    }
    return null;
  }

  /** Why a new submission is refused now, or null when it is not. */
  public String refusal() {
    String quota = refusedBy();
    if (quota == null) {
      return null;
    }
    return switch (quota) {
      case "max_active" -> "you already have " + active + " unfinished submissions (limit " + limits.maxActive() + ")";
      case "submissions_per_hour" -> "you made " + lastHour + " submissions within the hour (limit "
          + limits.perHour() + " an hour)";
      default -> "your runs held a GPU for " + Math.round(gpuSeconds) + " s within the day (limit "
          + limits.gpuSecondsPerDay() + " GPU-seconds a day)";
    };
  }

  /**
   * Seconds until the limit that refuses lets a submission in (at least 1): the end of the hour or day window; for
   * unfinished submissions, an estimate (one may end soon).
   */
  public long retryAfterSeconds() {
    String quota = refusedBy();
    if (quota == null) {
      return 0;
    }
    Double frees = switch (quota) {
      case "max_active" -> 10.0;
      case "submissions_per_hour" -> hourFreesIn;
      default -> dayFreesIn;
    };
    return Math.max(1, (long) Math.ceil(frees == null ? 3600 : frees));
  }

  /** As {@code /api/me} shows it: each quota's limit (null: none) and what is used. */
  public JsonObject toJson() {
    return new JsonObject()
        .put("max_active", new JsonObject().put("limit", limits.maxActive()).put("used", active))
        .put("submissions_per_hour", new JsonObject().put("limit", limits.perHour() == 0 ? null : limits.perHour())
            .put("used", lastHour))
        .put("gpu_seconds_per_day", new JsonObject()
            .put("limit", limits.gpuSecondsPerDay() == 0 ? null : limits.gpuSecondsPerDay())
            .put("used", Math.round(gpuSeconds * 10) / 10.0));
  }
}
