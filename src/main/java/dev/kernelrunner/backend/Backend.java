package dev.kernelrunner.backend;

import dev.kernelrunner.model.Mode;
import io.vertx.core.Future;
import io.vertx.core.json.JsonObject;
import java.util.Set;

/** Runs the agent for one submission somewhere (this host, a dstack fleet) and reports what it prints. */
public interface Backend {

  String name();

  /**
   * Starts a run of {@code payload}. The listener is called on the caller's context, events in the order the
   * agent printed them, then exactly once {@link RunListener#onExit} or {@link RunListener#onFailed}.
   */
  Future<RunHandle> start(JsonObject payload, RunListener listener);

  /**
   * Whether a run first waits for a machine: its time limit then starts with the agent's first event, and
   * the backend bounds the wait itself.
   */
  default boolean provisions() {
    return false;
  }

  /**
   * Where to pick a run up again: the backend's run name, how many log lines were consumed and the backend's own
   * note of where they end ({@link RunListener#onLogPosition}), and the run's event key.
   */
  record Resume(String submissionId, String runName, int lines, String position, String eventKey, Mode mode,
                String gpuType) {}

  /** Follows a run that an earlier instance of the service started, from where {@code resume} says. */
  default Future<RunHandle> attach(Resume resume, RunListener listener) {
    return Future.failedFuture(new UnsupportedOperationException(name() + " runs do not outlive the service"));
  }

  /** Stops runs of this service that belong to none of {@code live} (run names); answers how many. */
  default Future<Integer> sweep(Set<String> live) {
    return Future.succeededFuture(0);
  }

  /** A started run. */
  interface RunHandle {
    /** The local process id; null where the run is not a process of this host. */
    Long pid();

    String node();

    /** The backend's name for the run (a dstack run name); null where it has none. */
    String runName();

    /** Asks the run to stop (TERM), then forces it after the grace period (KILL). Idempotent. */
    void kill();

    /** Whether the run goes on when the service stops (it is re-attached at the next start). */
    default boolean survivesRestart() {
      return false;
    }

    /** Stops following the run without stopping it (the service is going away). */
    default void detach() {}
  }
}
