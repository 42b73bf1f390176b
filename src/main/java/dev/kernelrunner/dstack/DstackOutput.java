package dev.kernelrunner.dstack;

import io.vertx.core.json.DecodeException;
import io.vertx.core.json.JsonObject;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * Reading what the dstack CLI prints: JSON after any leading text (the daily update banner), {@code [error]}
 * lines, and Rich tables (parsed by the header's column offsets; run with a wide COLUMNS so cells are not cut).
 */
public final class DstackOutput {
  private DstackOutput() {}

  private static final Set<String> FINAL_RUN_STATUSES = Set.of("terminated", "failed", "done");

  /** The CLI's own error message, if it printed one ({@code [error]message} on stdout). */
  public static Optional<String> error(String stdout, String stderr) {
    for (String text : List.of(stdout, stderr)) {
      for (String line : text.split("\n")) {
        String trimmed = line.strip();
        if (trimmed.startsWith("[error]")) {
          return Optional.of(trimmed.substring("[error]".length()).strip());
        }
      }
    }
    return Optional.empty();
  }

  /** The JSON object in {@code stdout}, skipping any text before it. */
  public static JsonObject json(String stdout) {
    int start = stdout.indexOf('{');
    while (start >= 0) {
      if (start == 0 || stdout.charAt(start - 1) == '\n') {
        try {
          return new JsonObject(stdout.substring(start).strip());
        } catch (DecodeException e) {
          // not JSON from here: try the next line that opens an object
        }
      }
      start = stdout.indexOf('{', start + 1);
    }
    throw new DecodeException("no JSON object in the CLI's output: " + abbreviate(stdout));
  }

  /**
   * Rows of a Rich table, keyed by the header's column names. Columns are cut at the header's offsets;
   * indented rows (a multi-job run's {@code replica=N job=M}) are skipped.
   */
  public static List<Map<String, String>> table(String stdout) {
    return table(stdout, "NAME");
  }

  /** Rows of the table whose header starts with {@code firstColumn}. */
  public static List<Map<String, String>> table(String stdout, String firstColumn) {
    List<String> lines = stdout.lines().filter(l -> !l.isBlank()).toList();
    int header = -1;
    for (int i = 0; i < lines.size(); i++) {
      if (lines.get(i).strip().startsWith(firstColumn + " ")) {
        header = i;
        break;
      }
    }
    List<Map<String, String>> rows = new ArrayList<>();
    if (header < 0) {
      return rows;
    }
    String head = lines.get(header);
    List<Integer> starts = new ArrayList<>();
    List<String> names = new ArrayList<>();
    for (int i = 0; i < head.length(); i++) {
      boolean begins = head.charAt(i) != ' ' && (i == 0 || head.charAt(i - 1) == ' ');
      boolean singleSpaceInside = i > 1 && head.charAt(i - 2) != ' ' && head.charAt(i - 1) == ' ';
      if (begins && !singleSpaceInside) {
        starts.add(i);
      }
    }
    for (int c = 0; c < starts.size(); c++) {
      int end = c + 1 < starts.size() ? starts.get(c + 1) : head.length();
      names.add(head.substring(starts.get(c), end).strip());
    }
    int indent = starts.get(0);
    for (String line : lines.subList(header + 1, lines.size())) {
      if (line.length() <= indent || line.charAt(indent) == ' ' || line.strip().startsWith("─")) {
        continue;
      }
      Map<String, String> row = new LinkedHashMap<>();
      for (int c = 0; c < starts.size(); c++) {
        int from = Math.min(starts.get(c), line.length());
        int to = c + 1 < starts.size() ? Math.min(starts.get(c + 1), line.length()) : line.length();
        row.put(names.get(c), line.substring(from, to).strip());
      }
      rows.add(row);
    }
    return rows;
  }

  /** The parts of a run the runner acts on, from {@code run get --json} or a {@code ps -a} table row. */
  public record RunState(String name, String status, String statusMessage, String terminationReason,
                         String jobTerminationReason, String jobMessage, Integer exitStatus, String backend,
                         String instance, Double price, Double cost) {

    public boolean isFinal() {
      return FINAL_RUN_STATUSES.contains(status);
    }

    public JsonObject toJson() {
      return new JsonObject().put("run_name", name).put("status", status).put("status_message", statusMessage)
          .put("termination_reason", terminationReason).put("job_termination_reason", jobTerminationReason)
          .put("job_message", jobMessage).put("exit_status", exitStatus).put("backend", backend)
          .put("instance", instance).put("price", price).put("cost", cost);
    }
  }

  public static RunState runState(JsonObject run) {
    JsonObject job = object(run, "latest_job_submission");
    JsonObject provisioning = object(job, "job_provisioning_data");
    JsonObject instanceType = object(provisioning, "instance_type");
    JsonObject spec = object(run, "run_spec");
    Object price = provisioning.getValue("price");
    Object cost = run.getValue("cost");
    return new RunState(spec.getString("run_name", run.getString("run_name")), run.getString("status"),
        run.getString("status_message"), run.getString("termination_reason"), job.getString("termination_reason"),
        job.getString("termination_reason_message"), job.getInteger("exit_status"),
        provisioning.getString("backend"), instanceType.getString("name"),
        price instanceof Number n ? n.doubleValue() : null, cost instanceof Number n ? n.doubleValue() : null);
  }

  /**
   * A run's state from a {@code ps -a} table row (CLIs without JSON output). The STATUS column holds the
   * status message: {@code exited (1)}, {@code no offers}, {@code running}...
   */
  public static RunState runState(Map<String, String> row) {
    String message = row.getOrDefault("STATUS", "");
    Integer exit = null;
    String status;
    if (isCut(message)) {
      // Rich cut the cell (a narrow terminal): what it said is unknown, and never taken for a final status.
      status = "unknown";
    } else if (message.startsWith("exited (")) {
      exit = Integer.valueOf(message.substring("exited (".length(), message.indexOf(')')));
      status = exit == 0 ? "done" : "failed";
    } else {
      status = switch (message) {
        case "pending", "submitted", "provisioning", "running", "terminating" -> message;
        case "pulling" -> "provisioning";
        case "retrying" -> "pending";
        case "stopped", "aborted", "terminated", "interrupted" -> "terminated";
        case "done" -> "done";
        default -> "failed";
      };
    }
    String price = row.getOrDefault("PRICE", "").replace("$", "");
    Double parsedPrice = null;
    try {
      parsedPrice = price.isBlank() ? null : Double.valueOf(price);
    } catch (NumberFormatException e) {
      // a cut or absent cell
    }
    return new RunState(row.get("NAME"), status, message, null, null, null, exit, row.get("BACKEND"), null,
        parsedPrice, null);
  }

  /** A table cell Rich cut short (or left empty) for lack of width. */
  public static boolean isCut(String cell) {
    return cell == null || cell.isBlank() || cell.endsWith("…");
  }

  /** A nested object, empty when absent or null (dstack sends null before a job is provisioned). */
  static JsonObject object(JsonObject json, String field) {
    JsonObject value = json.getJsonObject(field);
    return value == null ? new JsonObject() : value;
  }

  static String abbreviate(String text) {
    String flat = text.strip().replace('\n', ' ');
    return flat.length() > 300 ? flat.substring(0, 300) + "…" : flat;
  }
}
