package dev.kernelrunner.model;

/**
 * A stored event as it is published to the streams of its submission. Its SSE text is made once, by the
 * first stream that writes it, and shared by every other stream: with many watchers of one submission, one
 * encoding per event rather than one per watcher. {@code fieldsJson} is the fields as stored (JSON text).
 */
public final class LiveFrame {
  private final EventFrame frame;
  private final String fieldsJson;
  private volatile String sse;

  public LiveFrame(EventFrame frame, String fieldsJson) {
    this.frame = frame;
    this.fieldsJson = fieldsJson;
  }

  public int seq() {
    return frame.seq();
  }

  public EventType type() {
    return frame.type();
  }

  public io.vertx.core.json.JsonObject fields() {
    return frame.fields();
  }

  /** {@code id:}, {@code event:} and {@code data:} lines of the frame, ending with the blank line. */
  public String sse() {
    String text = sse;
    if (text == null) {
      text = sse = EventFrame.sse(frame.seq(), frame.type(), data());
    }
    return text;
  }

  /**
   * The frame's JSON made from the stored fields' text, without building an object: the fields first, then
   * the frame's own keys, which win over any an agent might have printed (JSON readers keep the last).
   */
  private String data() {
    String inner = fieldsJson.trim();
    inner = inner.substring(1, inner.length() - 1).trim();
    StringBuilder json = new StringBuilder(inner.length() + 160).append('{');
    if (!inner.isEmpty()) {
      json.append(inner).append(',');
    }
    return json.append("\"submission_id\":\"").append(frame.submissionId()).append("\",\"seq\":").append(frame.seq())
        .append(",\"status\":\"").append(frame.type().name()).append("\",\"at\":\"").append(frame.at())
        .append("\"}").toString();
  }
}
