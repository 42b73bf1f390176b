package dev.kernelrunner.model;

import dev.kernelrunner.bus.ForSubmission;
import java.util.List;

/** Bus body of {@code store.events.append}: events of one submission, in order, stored together. */
public record EventAppend(String submissionId, List<NewEvent> events) implements ForSubmission {

  /** The reply: the stored events, in the same order. */
  public record Stored(List<EventFrame> frames) {}
}
