package dev.kernelrunner.workers;

import io.vertx.core.json.JsonObject;
import java.util.List;

/**
 * The messages between the HTTP edge (the worker API, {@code /api/worker/}) and {@link WorkerHubVerticle}. A
 * worker is known by the id it chose (stable while its process lives) and the token it presented; a job by the
 * id the hub gave it (the run name of a submission's attempt).
 */
public final class WorkerProtocol {
  private WorkerProtocol() {}

  /**
   * The worker token a request came with: its public {@code id}, its {@code user} (the machine it was made for), its
   * {@code pool} and whether that pool's results may rank ({@code trusted}).
   */
  public record Token(String id, String user, String pool, boolean trusted) {}

  /**
   * A worker's job stream opened ({@code connectionId} names it; the hub pushes {@link Push}es to
   * {@code workers.push.<connectionId>}). {@code holding}: the job it still runs from before (a reconnect), or
   * null.
   */
  public record Connect(String connectionId, Token token, String workerId, String gpuType, String host,
                        String device, String holding) {}

  /** A worker's job stream closed. */
  public record Disconnect(String connectionId) {}

  /** Lines of a job's agent output, {@code from} being the index of the first (the job's lines count from 0). */
  public record Lines(String tokenId, String workerId, String jobId, int from, List<String> lines) {
    public Lines {
      lines = List.copyOf(lines);
    }
  }

  /** A job's agent ended with {@code exitCode} after {@code lines} lines; {@code tail}: its last stderr lines. */
  public record Exit(String tokenId, String workerId, String jobId, int lines, Integer exitCode,
                     List<String> tail) {
    public Exit {
      tail = List.copyOf(tail);
    }
  }

  /** What the hub has of a job's lines now: the worker sends the next batch from {@code consumed}. */
  public record Consumed(int consumed) {}

  /**
   * Something for one worker's stream: {@code job} (a job to run: {@code job_id}, {@code payload}), {@code cancel}
   * (stop a job: {@code job_id}), {@code drop} (a job it holds is no longer the service's: stop it, send nothing
   * more), {@code replaced} (a newer stream of the same worker took over: this one closes), {@code revoked} (its
   * token was revoked: the stream closes, and the token is refused from now on).
   */
  public record Push(String event, JsonObject data) {}

  public static String pushAddress(String connectionId) {
    return "workers.push." + connectionId;
  }
}
