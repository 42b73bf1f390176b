package dev.kernelrunner.dstack;

import io.vertx.core.json.DecodeException;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.util.ArrayList;
import java.util.List;

/**
 * A dstack API call that did not succeed, sorted by what the caller does about it. The server's error bodies
 * (server/app.py:270-285, server/utils/routers.py:113-151): a client error is 400
 * {@code {"detail": [{"msg", "code"}]}} with code {@code resource_not_exists} for a missing run or fleet; a bad
 * token is 403 {@code {"detail": {"msg": "Invalid token"}}} (401 on some FastAPI versions); a body the schema
 * refuses (unknown fields are forbidden, core/models/common.py:50) is 422 {@code {"detail": [{"msg", "loc"}]}}.
 */
public final class DstackError extends RuntimeException {

  public enum Kind {
    /** 400 resource_not_exists: the run or fleet is not there. */
    NOT_FOUND,
    /** 401/403: the token is wrong or lacks rights to the project. */
    FORBIDDEN,
    /** Another 4xx: the server refused what was sent (an incompatible version, a schema violation). */
    REJECTED,
    /** 5xx: the server failed; asking again may work. */
    SERVER,
    /** No answer: connection refused, reset or timed out; asking again may work. */
    UNREACHABLE
  }

  private final Kind kind;
  private final int status;

  public DstackError(Kind kind, int status, String message) {
    super(message);
    this.kind = kind;
    this.status = status;
  }

  public Kind kind() {
    return kind;
  }

  public int status() {
    return status;
  }

  /** The error a non-2xx answer of {@code call} means. */
  static DstackError of(String call, int status, String body) {
    List<String> messages = new ArrayList<>();
    List<String> codes = new ArrayList<>();
    try {
      Object detail = body == null || body.isBlank() ? null : new JsonObject(body).getValue("detail");
      for (Object item : detail instanceof JsonArray array ? array : new JsonArray().add(detail)) {
        if (item instanceof JsonObject object) {
          String msg = object.getString("msg");
          if (msg != null) {
            Object loc = object.getValue("loc");
            messages.add(loc instanceof JsonArray path ? msg + " at " + path.encode() : msg);
          }
          if (object.getValue("code") instanceof String code) {
            codes.add(code);
          }
        } else if (item instanceof String text) {
          messages.add(text);
        }
      }
    } catch (DecodeException | ClassCastException e) {
      messages.add(body.length() > 300 ? body.substring(0, 300) + "…" : body);
    }
    String said = messages.isEmpty() ? "no details" : String.join("; ", messages);
    Kind kind;
    if (status == 400 && codes.contains("resource_not_exists")) {
      kind = Kind.NOT_FOUND;
    } else if (status == 401 || status == 403) {
      kind = Kind.FORBIDDEN;
      said = said + " (check DSTACK_TOKEN and that its user is a member of the project)";
    } else if (status >= 500) {
      kind = Kind.SERVER;
    } else {
      kind = Kind.REJECTED;
    }
    return new DstackError(kind, status, "dstack " + call + " answered " + status + ": " + said);
  }
}
