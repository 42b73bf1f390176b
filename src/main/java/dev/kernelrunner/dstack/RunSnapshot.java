package dev.kernelrunner.dstack;

import io.vertx.core.json.JsonObject;
import java.util.Set;

/**
 * What one {@code runs/get} answer says about a run (core/models/runs.py:694-731 {@code Run}). The detail lives
 * on {@code latest_job_submission} (runs.py:435-457): its status, its status message ({@code no capacity},
 * {@code no fleets}, {@code exited (N)}, ... from services/jobs/__init__.py:604-627), the termination reason and
 * its message, the exit status, the provisioning data (backend, instance type, price) and, while the image is
 * pulled, {@code image_pull_progress} (runs.py:422-433, 457: downloaded, extracted and total bytes; from 0.20.18).
 * The run-level status message is only "pulling", "retrying" or the status itself.
 */
public record RunSnapshot(String name, String status, String jobSubmissionId, String jobStatus,
                          String jobStatusMessage, String terminationReason, String jobTerminationReason,
                          String jobTerminationMessage, Integer exitStatus, String backend, String instance,
                          Double price, Double cost, JsonObject imagePull) {

  /** RunStatus.finished_statuses (runs.py:671-685). */
  private static final Set<String> FINAL = Set.of("terminated", "failed", "done");

  public boolean isFinal() {
    return FINAL.contains(status);
  }

  static RunSnapshot of(JsonObject run) {
    JsonObject job = object(run, "latest_job_submission");
    JsonObject provisioning = object(job, "job_provisioning_data");
    JsonObject instanceType = object(provisioning, "instance_type");
    JsonObject spec = object(run, "run_spec");
    String name = spec.getString("run_name");
    if (name == null) {
      name = object(spec, "configuration").getString("name");
    }
    return new RunSnapshot(name, run.getString("status"), job.getString("id"), job.getString("status"),
        job.getString("status_message"), run.getString("termination_reason"), job.getString("termination_reason"),
        job.getString("termination_reason_message"),
        job.getValue("exit_status") instanceof Number exit ? exit.intValue() : null,
        provisioning.getString("backend"), instanceType.getString("name"), decimal(provisioning.getValue("price")),
        decimal(run.getValue("cost")), job.getValue("image_pull_progress") instanceof JsonObject pull ? pull : null);
  }

  /** The object at {@code key}; empty when absent or null (dstack sends optional fields as null). */
  private static JsonObject object(JsonObject json, String key) {
    return json.getValue(key) instanceof JsonObject object ? object : new JsonObject();
  }

  private static Double decimal(Object value) {
    return value instanceof Number number ? number.doubleValue() : null;
  }
}
