package dev.kernelrunner.model;

/**
 * The profiler's report file of one submission, as the agent sent it in pieces and the supervisor put them
 * together (checked against its SHA-256); travels on the bus as is (LocalCodec).
 */
public record ProfileReport(String submissionId, String fileName, String sha256, byte[] content) {}
