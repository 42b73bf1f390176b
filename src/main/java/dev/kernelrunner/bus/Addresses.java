package dev.kernelrunner.bus;

/** Every event-bus address, in one place. */
public final class Addresses {
  private Addresses() {}

  // Submission tracker
  public static final String SUBMISSIONS_CREATE = "submissions.create";
  public static final String SUBMISSIONS_PROGRESS = "submissions.progress";
  public static final String TRACKER_CANCEL = "tracker.cancel";
  public static final String TRACKER_QUEUES = "tracker.queues";
  /** Body {@code {gpu_type, capacity}}: a worker type's connected workers changed. */
  public static final String TRACKER_CAPACITY = "tracker.capacity";
  /** A GPU type that cannot run anything now: its queued submissions end as ERROR ({gpu_type, message, details}). */
  public static final String TRACKER_FAIL_QUEUED = "tracker.fail-queued";

  // Worker hub (bodies: dev.kernelrunner.workers.WorkerProtocol records)
  public static final String WORKERS_CONNECT = "workers.connect";
  public static final String WORKERS_DISCONNECT = "workers.disconnect";
  public static final String WORKERS_LINES = "workers.lines";
  public static final String WORKERS_EXIT = "workers.exit";
  public static final String WORKERS_LIST = "workers.list";
  public static final String WORKERS_RELEASE = "workers.release";
  /** Published by the store when tokens are revoked: {@code {"ids": [...]}}. */
  public static final String TOKENS_REVOKED = "tokens.revoked";

  // Active-process registry
  public static final String REGISTRY_REGISTER = "registry.register";
  public static final String REGISTRY_UNREGISTER = "registry.unregister";
  public static final String REGISTRY_STREAM_OPENED = "registry.stream.opened";
  public static final String REGISTRY_STREAM_CLOSED = "registry.stream.closed";
  public static final String REGISTRY_LIST = "registry.list";

  // Process supervisor
  public static final String SUPERVISOR_START = "supervisor.start";
  public static final String SUPERVISOR_KILL = "supervisor.kill";
  public static final String SUPERVISOR_REAP = "supervisor.reap";
  public static final String SUPERVISOR_ATTACH = "supervisor.attach";
  public static final String SUPERVISOR_SWEEP = "supervisor.sweep";

  // Fleet manager
  public static final String FLEET_ENSURE = "fleet.ensure";
  public static final String FLEET_LIST = "fleet.list";
  public static final String FLEET_HEALTH = "fleet.health";

  // Result store
  public static final String STORE_PING = "store.ping";
  public static final String STORE_SUBMISSION_CREATE = "store.submission.create";
  public static final String STORE_SUBMISSION_GET = "store.submission.get";
  public static final String STORE_SUBMISSION_LIST = "store.submission.list";
  public static final String STORE_SUBMISSION_UNFINISHED = "store.submission.unfinished";
  /** {@code {submissions: [...]}}: results published with their timing verdict still to come (after a restart). */
  public static final String STORE_SUBMISSION_VERDICT_PENDING = "store.submission.verdict_pending";
  public static final String STORE_SUBMISSION_SET_RUN = "store.submission.set_run";
  public static final String STORE_SUBMISSION_SET_LOG_OFFSET = "store.submission.set_log_offset";
  public static final String STORE_SUBMISSION_REQUEUE = "store.submission.requeue";
  /** Body {@link dev.kernelrunner.model.EventAppend}, reply {@link dev.kernelrunner.model.EventAppend.Stored}. */
  public static final String STORE_EVENTS_APPEND = "store.events.append";
  public static final String STORE_EVENTS_AFTER = "store.events.after";
  /** Body {@code {submission_id, fields: {timing}}}: a pending BENCHMARKED's timing verdict (VERIFIED). */
  public static final String STORE_EVENTS_VERIFIED = "store.events.verified";
  /** Body {@link dev.kernelrunner.model.ProfileReport}; reply an empty object once stored. */
  public static final String STORE_PROFILE_PUT = "store.profile.put";
  /** Body {@code {submission_id}}; reply {@link dev.kernelrunner.model.ProfileReport}, or 404. */
  public static final String STORE_PROFILE_GET = "store.profile.get";
  /** A leaderboard's candidates, best first: {problem, gpu_type, dtype, limit (absent: all)} -> {rows}. */
  public static final String STORE_LEADERBOARD = "store.leaderboard";
  /** A user's best accepted speedup per GPU type and problem: {user_id} -> {best: [{gpu_type, problem, speedup}]}. */
  public static final String STORE_BEST_SPEEDUPS = "store.best.speedups";
  /** {source, file: baselines.py's JSON} -> {inserted}: stores a baselines file's measurements, marks the newest. */
  public static final String STORE_BASELINES_LOAD = "store.baselines.load";
  /** {} -> {jobs: [{id, gpu_type, result}]}: baseline jobs ended BASELINED whose figures are not stored yet. */
  public static final String STORE_BASELINES_UNLOADED_JOBS = "store.baselines.unloaded_jobs";
  /** {@link dev.kernelrunner.model.BaselineJobs} -> its Queued: an admin's baseline jobs, queued. */
  public static final String BASELINES_MEASURE = "baselines.measure";
  /** {@link dev.kernelrunner.model.BaselineJobs.Measured} -> {inserted}: a baseline job's figures, stored. */
  public static final String BASELINES_MEASURED = "baselines.measured";
  /** {gpu_type, problem, dtype} (each null: any) -> {baselines: [...]}: the current baselines. */
  public static final String STORE_BASELINES_CURRENT = "store.baselines.current";
  /** Every board with entries: {} -> {boards}. */
  public static final String STORE_LEADERBOARDS = "store.leaderboards";
  /** {id, invalidate, reason, by} -> {id, invalidated}: takes a result off the boards, or puts it back. */
  public static final String STORE_SUBMISSION_MODERATE = "store.submission.moderate";
  /** {user_id, max_active, per_hour, gpu_seconds_per_day} -> {quotas: each limit and use, refused_by, refusal, retry_after_seconds}. */
  public static final String STORE_QUOTA_USAGE = "store.quota.usage";
  public static final String STORE_TOKEN_CREATE = "store.token.create";
  public static final String STORE_TOKEN_LOOKUP = "store.token.lookup";
  public static final String STORE_TOKEN_LIST = "store.token.list";
  /** {@code {id}} (404 unless live), or {@code {user_id, role}}: every live token of that user and role. */
  public static final String STORE_TOKEN_REVOKE = "store.token.revoke";
  public static final String STORE_TOKEN_BIND = "store.token.bind";
  public static final String STORE_TOKEN_BOOTSTRAP_ADMIN = "store.token.bootstrap_admin";

  private static final String EVENTS_PREFIX = "submissions.events.";

  /** Where the stored events of one submission are published. */
  public static String events(String submissionId) {
    return EVENTS_PREFIX + submissionId;
  }
}
