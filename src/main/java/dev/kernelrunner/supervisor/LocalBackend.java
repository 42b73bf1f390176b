package dev.kernelrunner.supervisor;

import dev.kernelrunner.backend.AgentOutput;
import dev.kernelrunner.backend.Backend;
import dev.kernelrunner.backend.PayloadFile;
import dev.kernelrunner.backend.RunListener;
import dev.kernelrunner.config.AppConfig;
import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonObject;
import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Runs the agent as a child process of this service: {@code AGENT_COMMAND --payload <file>}, no shell, in a
 * session of its own. Its stdout and stderr are read by threads of their own, never by an event loop.
 */
public final class LocalBackend implements Backend {
  private static final Logger log = LoggerFactory.getLogger(LocalBackend.class);
  private static final long DRAIN_MILLIS = 2000;

  private final Vertx vertx;
  private final AppConfig.Agent agent;
  private final Path runsDir;
  private final String node;
  private final AgentSandbox sandbox;

  public LocalBackend(Vertx vertx, AppConfig.Agent agent, Path runsDir, String node, AgentSandbox sandbox) {
    this.vertx = vertx;
    this.agent = agent;
    this.runsDir = runsDir;
    this.node = node;
    this.sandbox = sandbox;
  }

  @Override
  public String name() {
    return AppConfig.LOCAL_BACKEND;
  }

  @Override
  public Future<Backend.RunHandle> start(JsonObject payload, RunListener listener) {
    Context context = vertx.getOrCreateContext();
    String id = payload.getString("submission_id");
    return vertx.executeBlocking(() -> {
      AgentOutput.EventKey key = AgentOutput.EventKey.of(payload.getString("event_key"));
      Path file = PayloadFile.write(runsDir, payload);
      Path runDir = file.getParent();
      sandbox.handOver(runDir);
      // No setsid in front: the agent starts its own session (one program start less per submission; at
      // 200 starts a second they were a quarter of the 2-core benchmark machine). See ProcessTree.
      List<String> argv = new ArrayList<>(agent.command());
      argv.add("--payload");
      argv.add(file.toAbsolutePath().toString());
      ProcessBuilder builder = new ProcessBuilder(sandbox.argv(argv))
          .directory(agent.workdir().toFile())
          .redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null")));
      sandbox.apply(builder, runDir.toAbsolutePath(), id);
      Process process = builder.start();
      LocalRun run = new LocalRun(id, process, context, listener,
          new AgentOutput.RunOutput(id, key, agent.logTailLines()), runDir);
      run.follow();
      return run;
    }, false);
  }

  /** One agent process and the threads that read it. */
  private final class LocalRun implements Backend.RunHandle {
    private final String id;
    private final Process process;
    private final Context context;
    private final RunListener listener;
    private final AgentOutput.RunOutput output;
    private final AtomicBoolean killing = new AtomicBoolean();
    /** Read by the stdout thread only: whether the agent was checked for leading its own process group. */
    private boolean groupChecked;

    private final Path runDir;

    LocalRun(String id, Process process, Context context, RunListener listener, AgentOutput.RunOutput output,
             Path runDir) {
      this.runDir = runDir;
      this.id = id;
      this.process = process;
      this.context = context;
      this.listener = listener;
      this.output = output;
    }

    void follow() {
      Thread out = reader("agent-out-" + id, process.getInputStream(), true);
      Thread err = reader("agent-err-" + id, process.getErrorStream(), false);
      Thread waiter = new Thread(() -> {
        Integer code = null;
        try {
          code = process.waitFor();
          // Whatever the agent left behind goes with it.
          ProcessTree.signal(process.pid(), true);
          out.join(DRAIN_MILLIS);
          err.join(DRAIN_MILLIS);
          RunsDirectory.delete(runDir);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
        Integer exitCode = code;
        onContext(() -> listener.onExit(exitCode, output.tail()));
      }, "agent-wait-" + id);
      waiter.setDaemon(true);
      waiter.start();
    }

    /** Hands work to the supervisor's context; once Vert.x has closed (shutdown) there is no one to tell. */
    private void onContext(Runnable work) {
      try {
        context.runOnContext(v -> work.run());
      } catch (java.util.concurrent.RejectedExecutionException e) {
        log.debug("submission {}: service closed before its agent's output was handled", id);
      }
    }

    private Thread reader(String name, InputStream stream, boolean events) {
      Thread thread = new Thread(() -> {
        try (stream) {
          AgentOutput.LineReader in = new AgentOutput.LineReader(stream);
          String line;
          while ((line = in.readLine()) != null) {
            if (events && !groupChecked) {
              groupChecked = true;
              ProcessTree.warnUnlessGroupLeader(process.pid(), id);
            }
            if (!events) {
              output.tail(line);
              continue;
            }
            AgentOutput.Event event = output.accept(line);
            if (event != null) {
              onContext(() -> listener.onEvent(event.type(), event.fields()));
            }
          }
        } catch (IOException e) {
          log.debug("submission {}: {} closed: {}", id, name, e.toString());
        }
      }, name);
      thread.setDaemon(true);
      thread.start();
      return thread;
    }

    @Override
    public Long pid() {
      return process.pid();
    }

    @Override
    public String node() {
      return node;
    }

    @Override
    public String runName() {
      return null;
    }

    @Override
    public void kill() {
      if (!process.isAlive() || !killing.compareAndSet(false, true)) {
        return;
      }
      vertx.executeBlocking(() -> {
        ProcessTree.signal(process.pid(), false);
        return null;
      }, false).onComplete(ar -> vertx.setTimer(Math.max(1, agent.killGrace().toMillis()), t ->
          vertx.executeBlocking(() -> {
            if (process.isAlive() || ProcessTree.groupAlive(process.pid())) {
              ProcessTree.signal(process.pid(), true);
            }
            return null;
          }, false)));
    }
  }
}
