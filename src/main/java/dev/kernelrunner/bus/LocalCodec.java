package dev.kernelrunner.bus;

import io.vertx.core.buffer.Buffer;
import io.vertx.core.eventbus.EventBus;
import io.vertx.core.eventbus.MessageCodec;

/**
 * Passes an immutable message body to a consumer in the same JVM as it is: no copy, no encoding. The hot
 * path (agent events, their storage, their fan-out to streams) carries records this way; JSON bodies are
 * copied on every hop. The service is not clustered, so these bodies never go over a wire.
 */
public final class LocalCodec<T> implements MessageCodec<T, T> {
  private final String name;

  private LocalCodec(Class<T> type) {
    this.name = "local:" + type.getName();
  }

  /** Makes {@code types} the default codec of each of these classes on {@code bus} (once per bus). */
  public static void register(EventBus bus, Class<?>... types) {
    for (Class<?> type : types) {
      try {
        registerOne(bus, type);
      } catch (IllegalStateException alreadyRegistered) {
        // A second deployment on the same Vert.x instance (tests restart the service): the codec stays.
      }
    }
  }

  private static <T> void registerOne(EventBus bus, Class<T> type) {
    bus.registerDefaultCodec(type, new LocalCodec<>(type));
  }

  @Override
  public void encodeToWire(Buffer buffer, T body) {
    throw new UnsupportedOperationException(name + " bodies stay in this JVM");
  }

  @Override
  public T decodeFromWire(int pos, Buffer buffer) {
    throw new UnsupportedOperationException(name + " bodies stay in this JVM");
  }

  @Override
  public T transform(T body) {
    return body;
  }

  @Override
  public String name() {
    return name;
  }

  @Override
  public byte systemCodecID() {
    return -1;
  }
}
