package dev.kernelrunner.bus;

import io.vertx.core.eventbus.Message;
import io.vertx.core.eventbus.ReplyException;
import org.slf4j.Logger;

/**
 * Failure codes carried by {@link ReplyException}: HTTP statuses, so that the edge maps them without a table.
 */
public final class Failures {
  private Failures() {}

  public static final int BAD_REQUEST = 400;
  public static final int NOT_FOUND = 404;
  public static final int CONFLICT = 409;
  public static final int TOO_MANY = 429;
  public static final int INTERNAL = 500;
  public static final int UNAVAILABLE = 503;

  /** A failure the caller can act on, with the status it maps to. */
  public static class CodedException extends RuntimeException {
    private final int code;

    public CodedException(int code, String message) {
      super(message);
      this.code = code;
    }

    public int code() {
      return code;
    }
  }

  /** Fails a message with the code of a {@link CodedException}, or as unavailable/internal otherwise. */
  public static void fail(Message<?> message, Throwable error, Logger log) {
    if (error instanceof CodedException coded) {
      message.fail(coded.code(), coded.getMessage());
    } else if (error instanceof ReplyException reply && reply.failureCode() > 0) {
      message.fail(reply.failureCode(), reply.getMessage());
    } else {
      log.warn("{} failed: {}", message.address(), error.toString());
      message.fail(INTERNAL, String.valueOf(error.getMessage()));
    }
  }

  /** The failure code of a bus failure; timeouts and missing handlers count as unavailable. */
  public static int code(Throwable error) {
    if (error instanceof CodedException coded) {
      return coded.code();
    }
    if (error instanceof ReplyException reply) {
      return switch (reply.failureType()) {
        case RECIPIENT_FAILURE -> reply.failureCode() > 0 ? reply.failureCode() : INTERNAL;
        case TIMEOUT, NO_HANDLERS -> UNAVAILABLE;
        default -> INTERNAL;
      };
    }
    return INTERNAL;
  }
}
