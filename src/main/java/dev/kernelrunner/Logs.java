package dev.kernelrunner;

import dev.kernelrunner.bus.ForSubmission;
import io.vertx.core.eventbus.DeliveryContext;
import io.vertx.core.eventbus.EventBus;
import io.vertx.core.json.JsonObject;
import org.slf4j.MDC;

/**
 * Follows a submission across verticles in the logs: a bus message whose body names a submission carries its
 * id in a header, and whoever handles it logs with {@code submission_id} in the MDC (JSON logs show it).
 */
public final class Logs {
  public static final String HEADER = "submission-id";
  public static final String MDC_KEY = "submission_id";

  private Logs() {}

  public static void carrySubmissionIds(EventBus bus) {
    bus.addOutboundInterceptor(Logs::tag);
    bus.addInboundInterceptor(Logs::withMdc);
  }

  private static void tag(DeliveryContext<Object> context) {
    Object id = context.body() instanceof JsonObject body ? body.getValue("submission_id")
        : context.body() instanceof ForSubmission about ? about.submissionId() : null;
    if (id instanceof String value && !context.message().headers().contains(HEADER)) {
      context.message().headers().add(HEADER, value);
    }
    context.next();
  }

  private static void withMdc(DeliveryContext<Object> context) {
    String id = context.message().headers().get(HEADER);
    if (id == null) {
      context.next();
      return;
    }
    String outer = MDC.get(MDC_KEY);
    MDC.put(MDC_KEY, id);
    try {
      context.next();
    } finally {
      if (outer == null) {
        MDC.remove(MDC_KEY);
      } else {
        MDC.put(MDC_KEY, outer);
      }
    }
  }
}
