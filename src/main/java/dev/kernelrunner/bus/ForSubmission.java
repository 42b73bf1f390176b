package dev.kernelrunner.bus;

/** A message body about one submission: its id goes with it in a header, for the logs. */
public interface ForSubmission {
  String submissionId();
}
