package dev.kernelrunner.http;

import dev.kernelrunner.bus.Addresses;
import dev.kernelrunner.bus.Bus;
import dev.kernelrunner.config.AppConfig;
import dev.kernelrunner.model.EventFrame;
import dev.kernelrunner.model.EventType;
import dev.kernelrunner.model.LiveFrame;
import dev.kernelrunner.model.Mode;
import io.vertx.core.Vertx;
import io.vertx.core.eventbus.EventBus;
import io.vertx.core.eventbus.MessageConsumer;
import io.vertx.core.http.HttpServerRequest;
import io.vertx.core.http.HttpServerResponse;
import io.vertx.core.json.JsonObject;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One SSE client of one submission: subscribes to live events first, replays what is stored after the
 * client's last event id, then goes live, skipping anything already sent, so nothing is lost or repeated.
 * Ends after the terminal event (or, for a BENCHMARKED whose times are still being cross-checked, after the
 * VERIFIED that follows it). A client that cannot keep up is disconnected; it resumes with Last-Event-ID.
 */
final class EventStream {
  private static final Logger log = LoggerFactory.getLogger(EventStream.class);

  private final Vertx vertx;
  private final EventBus bus;
  private final HttpServerRequest request;
  private final HttpServerResponse response;
  private final Runnable onClose;
  private final String submissionId;
  private final Mode mode;
  private final boolean cancelOnDisconnect;
  private final Duration heartbeat;
  private final int maxPendingBytes;
  private final SseMeters meters;
  private int lastSeq;
  private boolean replaying = true;
  private final List<LiveFrame> pending = new ArrayList<>();
  private MessageConsumer<LiveFrame> consumer;
  private long heartbeatTimer = -1;
  private boolean counted;
  private boolean closed;
  private boolean sawTerminal;
  private boolean awaitingVerdict;

  /** {@code onClose} runs once, when the stream ends for whatever reason. */
  EventStream(Vertx vertx, HttpServerRequest request, String submissionId, Mode mode, int afterSeq,
              boolean cancelOnDisconnect, AppConfig.Sse sse, SseMeters meters, Runnable onClose) {
    this.vertx = vertx;
    this.bus = vertx.eventBus();
    this.request = request;
    this.response = request.response();
    this.onClose = onClose;
    this.submissionId = submissionId;
    this.mode = mode;
    this.lastSeq = afterSeq;
    this.cancelOnDisconnect = cancelOnDisconnect;
    this.heartbeat = sse.heartbeat();
    this.maxPendingBytes = sse.maxPendingBytes();
    this.meters = meters;
  }

  /** Starts the stream; {@code finished} says the submission had already ended when the client asked. */
  void open(boolean finished) {
    response.setStatusCode(200).setChunked(true)
        .putHeader("Content-Type", "text/event-stream; charset=utf-8")
        .putHeader("Cache-Control", "no-cache")
        .putHeader("X-Accel-Buffering", "no");
    response.setWriteQueueMaxSize(maxPendingBytes);
    response.closeHandler(v -> {
      if (!closed) {
        meters.droppedClient.increment();
      }
      close();
    });
    response.exceptionHandler(error -> {
      if (closed || ClientGone.is(error)) {
        return; // the close handler counts a client that left
      }
      log.warn("stream of {} failed: {}", submissionId, error.toString());
      meters.droppedError.increment();
      close();
      request.connection().close();
    });
    response.write("retry: 2000\n\n");
    if (!finished) {
      counted = true;
      notifyRegistry(Addresses.REGISTRY_STREAM_OPENED);
    }
    consumer = bus.consumer(Addresses.events(submissionId), message -> onLive(message.body()));
    consumer.completion()
        .compose(v -> Bus.request(bus, Addresses.STORE_EVENTS_AFTER,
            new JsonObject().put("submission_id", submissionId).put("after_seq", lastSeq)))
        .onSuccess(reply -> {
          replaying = false;
          for (Object event : reply.getJsonArray("events")) {
            JsonObject frame = (JsonObject) event;
            int seq = frame.getInteger("seq");
            EventType type = EventType.valueOf(frame.getString("status"));
            write(seq, type, type.endsStream(frame, mode), () -> EventFrame.sse(seq, type, frame.encode()));
          }
          pending.forEach(live -> write(live.seq(), live.type(), live.type().endsStream(live.fields(), mode),
              live::sse));
          pending.clear();
          if (finished && !closed && !awaitingVerdict) {
            end();
          }
        })
        .onFailure(error -> {
          log.warn("stream of {} could not replay: {}", submissionId, error.toString());
          end();
        });
    heartbeatTimer = vertx.setPeriodic(heartbeat.toMillis(), t -> {
      if (!closed) {
        response.write(": heartbeat\n\n");
      }
    });
  }

  private void onLive(LiveFrame frame) {
    if (replaying) {
      pending.add(frame);
      return;
    }
    if (response.writeQueueFull()) {
      log.info("stream of {} cannot keep up: disconnecting it at seq {}", submissionId, lastSeq);
      meters.droppedSlow.increment();
      close();
      abort();
      return;
    }
    write(frame.seq(), frame.type(), frame.type().endsStream(frame.fields(), mode), frame::sse);
  }

  /**
   * Writes the event unless it was already sent; {@code text} gives its SSE message, made only if it is sent.
   * {@code ends}: the stream ends with it.
   */
  private void write(int seq, EventType type, boolean ends, Supplier<String> text) {
    if (closed) {
      return;
    }
    if (seq <= lastSeq) {
      if (ends) {
        sawTerminal = true; // it has ended: no grace, no cancel when this stream goes
        end(); // the client has it already (or said so: a Last-Event-ID past the end): the stream ends with it
      }
      return;
    }
    lastSeq = seq;
    response.write(text.get());
    meters.eventsSent.increment();
    if (type.isTerminal(mode) || ends) { // a VERIFIED ends a stream whose BENCHMARKED this one never sent
      sawTerminal = true;
    }
    awaitingVerdict = type.isTerminal(mode) && !ends; // a BENCHMARKED whose times are being cross-checked
    if (ends) {
      end();
    }
  }

  /**
   * Closes the socket now, with what is queued for it. Vert.x's own close is graceful (it writes an empty buffer and
   * closes once everything before it is flushed: VertxConnection.writeClose), which for a client too slow to read
   * kept the socket and megabytes of events until the idle timeout, and so did the channel's close, which passes
   * through Vert.x's handler on its way. Closed from the pipeline's first handler, the close reaches Netty's head
   * at once and drops the queue. The connection class is Vert.x's internal one; any other closes the graceful way.
   */
  private void abort() {
    if (request.connection() instanceof io.vertx.core.net.impl.ConnectionBase connection) {
      connection.channel().pipeline().firstContext().close();
    } else {
      request.connection().close();
    }
  }

  private void end() {
    if (!closed) {
      close();
      response.end();
    }
  }

  private void close() {
    if (closed) {
      return;
    }
    closed = true;
    onClose.run();
    vertx.cancelTimer(heartbeatTimer);
    if (consumer != null) {
      consumer.unregister();
    }
    if (counted) {
      notifyRegistry(Addresses.REGISTRY_STREAM_CLOSED);
    }
  }

  private void notifyRegistry(String address) {
    Bus.request(bus, address, new JsonObject().put("submission_id", submissionId)
            .put("cancel_on_disconnect", cancelOnDisconnect).put("finished", sawTerminal))
        .onFailure(error -> log.warn("{} for {} failed: {}", address, submissionId, error.toString()));
  }
}
