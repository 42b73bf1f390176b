package dev.kernelrunner;

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Instant;

/**
 * One service per {@code DATA_DIR}: an exclusive lock on {@code DATA_DIR/kernel-runner.lock}, held for the
 * process's life (the kernel drops it when the process dies, kill -9 included). Taken before anything in the
 * directory is touched, so that a second start cannot "recover" the first one's database and agents.
 */
public final class InstanceLock {
  static final String FILE = "kernel-runner.lock";

  private final FileChannel channel;
  private final FileLock lock;

  private InstanceLock(FileChannel channel, FileLock lock) {
    this.channel = channel;
    this.lock = lock;
  }

  /** Thrown when another process holds the lock; the message says which. */
  public static final class HeldException extends Exception {
    HeldException(String message) {
      super(message);
    }
  }

  /** Takes the lock or says who holds it. */
  public static InstanceLock acquire(Path dataDir) throws IOException, HeldException {
    Files.createDirectories(dataDir);
    Path file = dataDir.resolve(FILE);
    FileChannel channel = FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.READ,
        StandardOpenOption.WRITE);
    FileLock lock;
    try {
      lock = channel.tryLock();
    } catch (IOException | RuntimeException e) {
      channel.close();
      throw e;
    }
    if (lock == null) {
      String holder = Files.readString(file, StandardCharsets.UTF_8).trim();
      channel.close();
      throw new HeldException("another kernel-runner is using DATA_DIR " + dataDir.toAbsolutePath() + " ("
          + (holder.isEmpty() ? "holder unknown" : holder) + "); stop it first, or give this one its own DATA_DIR");
    }
    // Who holds it, for the message a second start prints (the lock itself is what counts).
    byte[] who = ("pid " + ProcessHandle.current().pid() + ", started " + Instant.now() + ", "
        + ManagementFactory.getRuntimeMXBean().getName() + "\n").getBytes(StandardCharsets.UTF_8);
    channel.truncate(0);
    channel.write(ByteBuffer.wrap(who), 0);
    channel.force(false);
    return new InstanceLock(channel, lock);
  }

  public void release() {
    try {
      lock.release();
      channel.close();
    } catch (IOException e) {
      // The process is ending; the kernel drops the lock with it.
    }
  }
}
