package dev.kernelrunner.supervisor;

import io.vertx.core.Future;
import io.vertx.core.json.JsonObject;

/** Runs the agent for one submission somewhere (this host, a dstack fleet) and reports what it prints. */
public interface Backend {

  String name();

  /**
   * Starts a run of {@code payload}. The listener is called on the caller's context, events in the order the
   * agent printed them, then exactly once {@link RunListener#onExit}.
   */
  Future<RunHandle> start(JsonObject payload, RunListener listener);

  /** A started run. */
  interface RunHandle {
    long pid();

    String node();

    String runName();

    /** Asks the run to stop (TERM), then forces it after the grace period (KILL). Idempotent. */
    void kill();
  }
}
