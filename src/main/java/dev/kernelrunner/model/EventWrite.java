package dev.kernelrunner.model;

import dev.kernelrunner.bus.ForSubmission;

/**
 * Bus body of {@code store.submission.requeue} and {@code store.events.verified}: one event of {@code submissionId}
 * written through a statement of its own (a re-queue also counts a restart; a verdict also fills in its result's
 * pending timing). Answered with the stored {@link EventFrame}.
 */
public record EventWrite(String submissionId, NewEvent event) implements ForSubmission {}
