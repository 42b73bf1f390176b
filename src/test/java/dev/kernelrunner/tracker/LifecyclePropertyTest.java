package dev.kernelrunner.tracker;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.kernelrunner.backend.Backend;
import dev.kernelrunner.backend.RunOrder;
import dev.kernelrunner.model.EventType;
import dev.kernelrunner.model.Mode;
import dev.kernelrunner.model.Progress;
import io.vertx.core.json.JsonObject;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.LinkedList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * {@link Lifecycle} driven through thousands of random interleavings by a model of its world: a queue with few
 * slots, agents that report events (in batches, with illegal ones among them), crash, lose their machine or send a
 * verdict late or never; cancels at any time, twice; a store that refuses writes for good or is away too long; GPU
 * types that stop being served; and service restarts, after which the machine is rebuilt from what was stored (runs
 * that outlive the service are followed again, others are gone). Whatever happens, every submission ends exactly
 * once: one stored end, its events in lifecycle order with nothing after the end but its one verdict, the verdict
 * stored when its result was published pending and one arrived (else recorded as not checked), a GPU slot held
 * exactly while a run is live, a queue place exactly while queued, and, once the world is quiet, nothing held and
 * nothing remembered; and none is put back in line twice. A fixed seed and a random one (printed on failure) run
 * each time.
 */
class LifecyclePropertyTest {
  private static final int TRIALS = 3000;

  @Test
  void everySubmissionEndsExactlyOnceWhateverHappens() {
    long random = new Random().nextLong();
    for (long seed : new long[] {42L, -3122391633503392654L, random}) { // the second once failed on a refused write
      Random seeds = new Random(seed);
      for (int trial = 0; trial < TRIALS; trial++) {
        long trialSeed = seeds.nextLong();
        try {
          new World(new Random(trialSeed)).run();
        } catch (AssertionError e) {
          throw new AssertionError("seed " + seed + ", trial " + trial + " (" + trialSeed + "): " + e.getMessage(), e);
        }
      }
    }
  }

  private static final List<EventType> PATH = List.of(EventType.COMPILING, EventType.CHECKING,
      EventType.TEST_RESULT, EventType.CHECKED, EventType.BENCHMARKING, EventType.BENCHMARK_RESULT,
      EventType.BENCHMARKED);

  /** One submission: what the machine says, what the world holds for it, and what was stored. */
  private static final class Sub {
    final int id;
    Lifecycle.State state = Lifecycle.State.queued(Mode.BENCHMARK);
    boolean remembered = true;
    boolean slot;
    Run run;
    /** The stored events, in order: the database's view. */
    final List<Stored> stored = new ArrayList<>(List.of(new Stored(EventType.IN_QUEUE, new JsonObject(), false)));
    int storedRequeues;
    /**
     * The last status the machine asked to store, stored or refused for good: what its next status event must follow
     * (a refused write leaves a gap in what is stored, not in the order of the machine's decisions).
     */
    EventType lastWritten = EventType.IN_QUEUE;
    /** A verdict the store refused for good (the one case where a pending result keeps no verdict). */
    boolean verdictRefused;
    /** A verdict its run sent while the machine awaited one. */
    boolean verdictArrived;

    Sub(int id) {
      this.id = id;
    }
  }

  private record Stored(EventType type, JsonObject fields, boolean terminal) {}

  /** A live run: its agent's script and what it has said; {@code ending}: how it ends once the world says so. */
  private static final class Run {
    int step;
    final int fate;
    Progress.Outcome ending;

    Run(int fate) {
      this.fate = fate;
    }
  }

  private static final class World {
    private final Random random;
    private final List<Sub> subs = new ArrayList<>();
    private final LinkedList<Sub> queue = new LinkedList<>();
    /** Inputs due to arrive later (a refused write's news, a run's end after a kill), in no particular order. */
    private final List<Runnable> pending = new ArrayList<>();
    private final int capacity;
    private final boolean outlives;
    private int restarts;

    World(Random random) {
      this.random = random;
      this.capacity = 1 + random.nextInt(2);
      this.outlives = random.nextBoolean();
      int count = 1 + random.nextInt(5);
      for (int i = 0; i < count; i++) {
        Sub sub = new Sub(i);
        subs.add(sub);
        queue.add(sub);
      }
    }

    void run() {
      for (int step = 0; step < 400; step++) {
        if (!act(true)) {
          break;
        }
      }
      // The world goes quiet: no more cancels, outages or restarts; what is under way finishes.
      for (int step = 0; step < 2000 && act(false); step++) {
        assertTrue(step < 1999, "the world never went quiet");
      }
      for (Sub sub : subs) {
        String who = "submission " + sub.id + " " + sub.state + " stored " + types(sub);
        assertEquals(Lifecycle.Phase.DONE, sub.state.phase(), who);
        assertTrue(!sub.remembered && !sub.slot && sub.run == null && !queue.contains(sub), who);
        long ends = sub.stored.stream().filter(Stored::terminal).count();
        assertEquals(1, ends, "one stored end: " + who);
        int end = indexOfEnd(sub);
        Stored last = sub.stored.get(end);
        int verdicts = sub.stored.size() - end - 1;
        if (!(last.type() == EventType.BENCHMARKED && EventType.timingPending(last.fields()))) {
          assertEquals(0, verdicts, "nothing after the end: " + who);
        } else if (sub.verdictRefused) {
          assertTrue(verdicts <= 1, "at most one verdict: " + who);
        } else {
          assertEquals(1, verdicts, "exactly one verdict after a pending result: " + who);
          JsonObject timing = sub.stored.get(end + 1).fields().getJsonObject("timing");
          assertEquals(sub.verdictArrived ? "verified" : "not_checked", timing.getString("status"), who);
        }
      }
    }

    /** Does one random thing that can happen now; false when nothing can. */
    private boolean act(boolean faults) {
      List<Runnable> can = new ArrayList<>();
      if (!queue.isEmpty() && slotsHeld() < capacity) {
        can.add(() -> apply(queue.getFirst(), new Lifecycle.Dispatch("local")));
      }
      for (Sub sub : subs) {
        if (sub.run != null) {
          can.add(() -> advance(sub));
        }
        if (faults && sub.remembered) {
          if (random.nextInt(4) == 0) {
            can.add(() -> apply(sub, new Lifecycle.CancelAsked("u" + random.nextInt(2), "owner")));
          }
          if (random.nextInt(8) == 0) {
            // The database was away too long while it had events to write.
            can.add(() -> apply(sub, new Lifecycle.StoreFailed("the database is away", false)));
          }
          if (sub.run == null && sub.state.phase() != Lifecycle.Phase.DONE) {
            // A late report from a run of it that is no more.
            can.add(() -> apply(sub, random.nextBoolean() ? new Lifecycle.Event(EventType.COMPILING,
                new JsonObject(), null) : new Lifecycle.RunEnded(new Progress.Exited(0), List.of())));
          }
        }
      }
      if (!pending.isEmpty()) {
        can.add(() -> pending.remove(random.nextInt(pending.size())).run());
      }
      if (faults && random.nextInt(40) == 0 && !queue.isEmpty()) {
        can.add(() -> List.copyOf(queue).forEach(sub -> apply(sub, new Lifecycle.Unserved("no worker"))));
      }
      if (faults && restarts < 2 && random.nextInt(60) == 0) {
        can.add(this::restart);
      }
      if (faults && !queue.isEmpty() && random.nextInt(10) == 0) {
        Sub sub = queue.get(random.nextInt(queue.size()));
        can.add(() -> apply(sub, new Lifecycle.Moved(queue.indexOf(sub))));
      }
      if (can.isEmpty()) {
        return false;
      }
      can.get(random.nextInt(can.size())).run();
      check();
      return true;
    }

    /** A live run says its next thing: an event (two in a row, as a worker's batch), or its end. */
    private void advance(Sub sub) {
      Run run = sub.run;
      if (run.ending != null) {
        end(sub, run.ending);
        return;
      }
      // Fates: 0 crashes part way, 1 loses its machine part way, 2 fails to compile, 3-5 a result with its verdict
      // to come that arrives, 6 one whose verdict never comes, 7 an illegal event thrown in, 8-9 a plain result.
      int stopAt = run.fate <= 2 ? random.nextInt(PATH.size()) : PATH.size() + (run.fate <= 5 ? 1 : 0);
      if (run.step >= stopAt) {
        Progress.Outcome outcome = run.fate == 0 ? new Progress.Exited(139)
            : run.fate == 1 ? new Progress.Lost("the machine went away")
            : run.fate == 2 ? new Progress.Failed(EventType.COMPILE_ERROR, new JsonObject().put("message", "nvcc"))
            : new Progress.Exited(0);
        end(sub, outcome);
        return;
      }
      int batch = random.nextInt(3) == 0 ? 2 : 1;
      for (int i = 0; i < batch && sub.run == run && run.step < stopAt; i++) {
        if (run.step == PATH.size()) {
          apply(sub, new Lifecycle.Event(EventType.VERIFIED, new JsonObject().put("timing",
              new JsonObject().put("status", "verified")), null));
        } else {
          EventType type = PATH.get(run.step);
          JsonObject fields = new JsonObject();
          if (type == EventType.BENCHMARKED && run.fate >= 3 && run.fate <= 6) {
            fields.put("verification", new JsonObject().put("timing", new JsonObject().put("status", "pending")));
          }
          if (run.fate == 7 && random.nextInt(3) == 0) {
            apply(sub, new Lifecycle.Event(EventType.values()[random.nextInt(EventType.values().length)],
                new JsonObject(), null));
          }
          apply(sub, new Lifecycle.Event(type, fields, null));
        }
        run.step++;
      }
    }

    private void end(Sub sub, Progress.Outcome outcome) {
      sub.run = null;
      apply(sub, new Lifecycle.RunEnded(outcome, List.of("tail")));
    }

    private void apply(Sub sub, Lifecycle.Input input) {
      if (sub.remembered) { // the tracker drops what comes for a submission it forgot
        decideAndPerform(sub, input);
      }
    }

    private void decideAndPerform(Sub sub, Lifecycle.Input input) {
      Lifecycle.State before = sub.state;
      if (input instanceof Lifecycle.Event event && before.phase() == Lifecycle.Phase.AWAITING_VERDICT
          && event.type() == EventType.VERIFIED) {
        sub.verdictArrived = true;
      }
      Lifecycle.Decision decision = Lifecycle.decide(before, input, 900);
      if (decision.refused()) {
        assertEquals(before, decision.next());
        return;
      }
      sub.state = decision.next();
      for (Lifecycle.Effect effect : decision.effects()) {
        perform(sub, effect);
      }
    }

    private void perform(Sub sub, Lifecycle.Effect effect) {
      if (effect instanceof Lifecycle.Store store) {
        store(sub, store.type(), store.fields(), store.write());
      } else if (effect instanceof Lifecycle.Requeue requeue) {
        assertTrue(!queue.contains(sub), "queued twice");
        if (requeue.first()) {
          queue.addFirst(sub);
        } else {
          queue.addLast(sub);
        }
        store(sub, EventType.IN_QUEUE, requeue.fields().copy().put("position", queue.indexOf(sub)),
            Lifecycle.Write.REQUEUE);
      } else if (effect instanceof Lifecycle.Enqueue) {
        assertTrue(!queue.contains(sub), "queued twice");
        queue.addLast(sub);
      } else if (effect instanceof Lifecycle.LeaveQueue) {
        assertTrue(queue.remove(sub), "left a queue it was not in");
      } else if (effect instanceof Lifecycle.TakeSlot) {
        assertTrue(!sub.slot, "took a second slot");
        queue.remove(sub); // the dispatcher polled it
        sub.slot = true;
      } else if (effect instanceof Lifecycle.Start) {
        assertTrue(sub.run == null, "started while a run of it is live");
        sub.run = new Run(random.nextInt(10));
        if (random.nextInt(20) == 0) {
          sub.run.ending = new Progress.NotStarted("the supervisor did not answer");
        }
      } else if (effect instanceof Lifecycle.Attach) {
        assertTrue(sub.run != null, "attached to a run that is gone");
      } else if (effect instanceof Lifecycle.Kill) {
        if (sub.run != null && sub.run.ending == null) {
          sub.run.ending = new Progress.Killed();
        }
      } else if (effect instanceof Lifecycle.FreeSlot) {
        assertTrue(sub.slot, "freed a slot it did not hold");
        sub.slot = false;
      } else if (effect instanceof Lifecycle.Forget) {
        sub.remembered = false;
      }
    }

    /** Stores an event, or refuses it for good (the tracker then says so, later). */
    private void store(Sub sub, EventType type, JsonObject fields, Lifecycle.Write write) {
      boolean terminal = type.isTerminal(sub.state.mode());
      if (indexOfEnd(sub) < 0 && type.changesStatus() && type.fromAgent() && type != EventType.PROVISIONING) {
        EventType status = sub.lastWritten;
        assertTrue(type.isError() || status == EventType.IN_QUEUE || status.accepts(type, sub.state.mode()),
            "wrote " + type + " after " + status + ": stored " + types(sub));
      }
      if (type.changesStatus()) {
        sub.lastWritten = type;
      }
      if (random.nextInt(25) == 0) {
        if (type == EventType.VERIFIED) {
          sub.verdictRefused = true;
        }
        // Told on the submission itself, even once forgotten: its refused end must still be replaced.
        pending.add(() -> decideAndPerform(sub, new Lifecycle.StoreFailed("refused", terminal)));
        return;
      }
      int end = indexOfEnd(sub);
      if (end >= 0) {
        Stored last = sub.stored.get(end);
        assertTrue(type == EventType.VERIFIED && last.type() == EventType.BENCHMARKED
                && EventType.timingPending(last.fields()) && sub.stored.size() == end + 1,
            "stored " + type + " after the end: " + types(sub));
      }
      if (write == Lifecycle.Write.REQUEUE) {
        sub.storedRequeues++;
      }
      sub.stored.add(new Stored(type, fields, terminal));
    }

    /**
     * The service restarts: what it remembered is gone, runs that do not outlive it stop with it (and their
     * slots), and the machine is rebuilt from what was stored, as the tracker's reconciliation does.
     */
    private void restart() {
      restarts++;
      pending.clear();
      queue.clear();
      List<Sub> verdicts = new ArrayList<>();
      Deque<Sub> unfinished = new ArrayDeque<>();
      for (Sub sub : subs) {
        sub.slot = false;
        int end = indexOfEnd(sub);
        Stored last = end < 0 ? null : sub.stored.get(end);
        boolean verdictPending = last != null && last.type() == EventType.BENCHMARKED
            && EventType.timingPending(last.fields()) && sub.stored.size() == end + 1;
        if (end < 0) {
          unfinished.add(sub);
        } else if (verdictPending) {
          verdicts.add(sub);
        }
        if (end >= 0 || !outlives || lastStatus(sub) == EventType.IN_QUEUE) {
          sub.run = null; // gone with the service (or swept as an orphan)
        }
        sub.remembered = end < 0 || verdictPending;
        sub.lastWritten = lastStatus(sub); // the new instance knows what was stored, nothing more
        sub.state = !sub.remembered ? sub.state.to(Lifecycle.Phase.DONE) : Lifecycle.State.found(
            end < 0 ? lastStatus(sub) : EventType.BENCHMARKED, Mode.BENCHMARK, sub.storedRequeues);
      }
      for (Sub sub : unfinished) {
        RunOrder.Attach attach = sub.run == null ? null : new RunOrder.Attach("dstack", new Backend.Resume(
            "s" + sub.id, "run", 0, null, "key", Mode.BENCHMARK, "g"));
        apply(sub, new Lifecycle.RestartFound(null, false, attach));
      }
      for (Sub sub : verdicts) {
        apply(sub, new Lifecycle.RestartFound(null, true, null));
      }
    }

    /** What must hold after every step. */
    private void check() {
      for (Sub sub : subs) {
        Lifecycle.Phase phase = sub.state.phase();
        String who = "submission " + sub.id + " " + sub.state;
        boolean live = phase == Lifecycle.Phase.RUNNING || phase == Lifecycle.Phase.CANCELLING
            || phase == Lifecycle.Phase.AWAITING_VERDICT || phase == Lifecycle.Phase.ENDING;
        assertEquals(live, sub.slot, "a slot is held exactly while its run is live: " + who);
        assertTrue(sub.run == null || live, "a run is live only while the machine says so: " + who);
        assertEquals(phase == Lifecycle.Phase.QUEUED, queue.contains(sub), "queued exactly while QUEUED: " + who);
        assertTrue(phase != Lifecycle.Phase.CANCELLING || sub.state.cancel() != null, "who cancelled: " + who);
        assertTrue(sub.remembered || phase == Lifecycle.Phase.DONE, "forgotten before DONE: " + who);
        assertTrue(phase != Lifecycle.Phase.FOUND, "still FOUND after its restart: " + who);
        assertTrue(sub.storedRequeues <= 1 && sub.state.restarts() <= 1, "put back in line once at most: " + who);
      }
      assertTrue(slotsHeld() <= capacity + subs.size(), "slots");
    }

    private long slotsHeld() {
      return subs.stream().filter(sub -> sub.slot).count();
    }

    private static int indexOfEnd(Sub sub) {
      for (int i = 0; i < sub.stored.size(); i++) {
        if (sub.stored.get(i).terminal()) {
          return i;
        }
      }
      return -1;
    }

    private static EventType lastStatus(Sub sub) {
      EventType status = EventType.IN_QUEUE;
      for (Stored stored : sub.stored) {
        if (stored.type().changesStatus()) {
          status = stored.type();
        }
      }
      return status;
    }

    private static List<EventType> types(Sub sub) {
      return sub.stored.stream().map(Stored::type).toList();
    }
  }
}
