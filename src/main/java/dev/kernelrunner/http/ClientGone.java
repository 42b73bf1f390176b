package dev.kernelrunner.http;

import io.vertx.core.http.HttpClosedException;
import java.io.IOException;
import java.nio.channels.ClosedChannelException;

/** Whether a failure only says that the client went away (closed the page, aborted an upload, lost its network). */
final class ClientGone {
  private ClientGone() {}

  static boolean is(Throwable error) {
    for (Throwable t = error; t != null; t = t.getCause()) {
      if (t instanceof HttpClosedException || t instanceof ClosedChannelException) {
        return true;
      }
      String message = String.valueOf(t.getMessage());
      if (t instanceof IOException && (message.contains("Connection reset") || message.contains("Broken pipe"))) {
        return true;
      }
      if (message.contains("Connection was closed")) {
        return true;
      }
    }
    return false;
  }
}
