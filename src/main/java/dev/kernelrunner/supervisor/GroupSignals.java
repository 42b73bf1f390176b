package dev.kernelrunner.supervisor;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Signals process groups through one long-lived {@code /bin/sh}, whose {@code kill} is a builtin, rather than a
 * {@code kill} process per signal. Every agent's end and every cancel signals a group; a {@code kill} process
 * costs two program starts (the JDK's spawn helper and kill), about 2.7 ms each on the 2-core benchmark
 * machine, so 200 agents ending within a second cost a fifth of it. Only a number and a fixed signal name
 * are ever written to the shell. Blocking and thread-safe; a shell that died is started again, and when none
 * can run, a {@code kill} process does the work.
 */
final class GroupSignals {
  private static final Logger log = LoggerFactory.getLogger(GroupSignals.class);
  private static final Set<String> SIGNALS = Set.of("TERM", "KILL", "0");
  private static final GroupSignals INSTANCE = new GroupSignals();

  private Process shell;
  private Writer commands;
  private BufferedReader answers;

  private GroupSignals() {}

  static GroupSignals get() {
    return INSTANCE;
  }

  /** {@code kill -s signal -- -pgid}: whether it reached a process (signal "0": whether one is alive). */
  synchronized boolean signal(long pgid, String signal) {
    if (pgid <= 1 || !SIGNALS.contains(signal)) {
      throw new IllegalArgumentException("refusing to signal group " + pgid + " with " + signal);
    }
    for (int attempt = 0; attempt < 2; attempt++) {
      try {
        if (shell == null || !shell.isAlive()) {
          start();
        }
        commands.write("kill -s " + signal + " -- -" + pgid + " 2>/dev/null; echo $?\n");
        commands.flush();
        String status = answers.readLine();
        if (status == null) {
          throw new IOException("the shell exited");
        }
        return status.trim().equals("0");
      } catch (IOException e) {
        log.debug("signal shell failed ({}); {}", e.toString(), attempt == 0 ? "starting another" : "using kill");
        stop();
      }
    }
    return killProcess(pgid, signal);
  }

  private void start() throws IOException {
    shell = new ProcessBuilder("/bin/sh").redirectError(ProcessBuilder.Redirect.DISCARD).start();
    commands = new OutputStreamWriter(shell.getOutputStream(), StandardCharsets.US_ASCII);
    answers = new BufferedReader(new InputStreamReader(shell.getInputStream(), StandardCharsets.US_ASCII));
  }

  private void stop() {
    if (shell != null) {
      shell.destroyForcibly();
      shell = null;
    }
  }

  private static boolean killProcess(long pgid, String signal) {
    try {
      Process kill = new ProcessBuilder("kill", "-s", signal, "--", "-" + pgid)
          .redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
      return kill.waitFor(5, TimeUnit.SECONDS) && kill.exitValue() == 0;
    } catch (IOException e) {
      log.debug("kill -s {} -{} failed: {}", signal, pgid, e.toString());
      return false;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return false;
    }
  }
}
