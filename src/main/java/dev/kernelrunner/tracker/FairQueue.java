package dev.kernelrunner.tracker;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.NoSuchElementException;
import java.util.function.Function;

/**
 * A GPU type's queue that takes turns between owners: each owner's items wait in the order they came, and the
 * owners are served one item each in rotation, so one user's hundred submissions do not hold back another's
 * one. An owner who was just served goes to the end of the rotation; a newcomer joins it at the end; an item
 * put back at the head (a re-queue) brings its owner to the front. Iteration is dispatch order.
 */
final class FairQueue<T> implements Iterable<T> {
  private final Function<T, String> owner;
  /** Owners with waiting items, in the order they will be served. */
  private LinkedHashMap<String, ArrayDeque<T>> rotation = new LinkedHashMap<>();
  private int size;

  FairQueue(Function<T, String> owner) {
    this.owner = owner;
  }

  int size() {
    return size;
  }

  boolean isEmpty() {
    return size == 0;
  }

  /** Joins its owner's line; returns its place in dispatch order (0: next). */
  int add(T item) {
    String who = owner.apply(item);
    int place = placeFor(who);
    rotation.computeIfAbsent(who, k -> new ArrayDeque<>()).add(item);
    size++;
    return place;
  }

  /** The place in dispatch order an item of {@code who} would take if it came now. */
  int placeFor(String who) {
    ArrayDeque<T> own = rotation.get(who);
    int round = own == null ? 0 : own.size();
    // Every owner gives one item per round: all of the rounds before its one, and that one too for owners
    // ahead of it in the rotation (a newcomer joins the rotation at the end).
    int place = round;
    boolean ahead = true;
    for (Map.Entry<String, ArrayDeque<T>> entry : rotation.entrySet()) {
      if (entry.getKey().equals(who)) {
        ahead = false;
        continue;
      }
      int length = entry.getValue().size();
      place += Math.min(length, round) + (ahead && length > round ? 1 : 0);
    }
    return place;
  }

  /** Back at the head: first of its owner's line, and its owner first in the rotation. */
  void addFirst(T item) {
    String who = owner.apply(item);
    LinkedHashMap<String, ArrayDeque<T>> next = new LinkedHashMap<>();
    ArrayDeque<T> line = rotation.remove(who);
    line = line == null ? new ArrayDeque<>() : line;
    line.addFirst(item);
    next.put(who, line);
    next.putAll(rotation);
    rotation = next;
    size++;
  }

  /** The next item to dispatch, taken out; its owner goes to the end of the rotation. Null when empty. */
  T poll() {
    Iterator<Map.Entry<String, ArrayDeque<T>>> owners = rotation.entrySet().iterator();
    if (!owners.hasNext()) {
      return null;
    }
    Map.Entry<String, ArrayDeque<T>> first = owners.next();
    owners.remove();
    T item = first.getValue().poll();
    if (!first.getValue().isEmpty()) {
      rotation.put(first.getKey(), first.getValue());
    }
    size--;
    return item;
  }

  boolean remove(T item) {
    String who = owner.apply(item);
    ArrayDeque<T> line = rotation.get(who);
    if (line == null || !line.remove(item)) {
      return false;
    }
    if (line.isEmpty()) {
      rotation.remove(who);
    }
    size--;
    return true;
  }

  /** Each owner's first item: the longest-waiting ones (an owner's line is in arrival order). */
  List<T> heads() {
    List<T> heads = new ArrayList<>();
    rotation.values().forEach(line -> heads.add(line.peek()));
    return heads;
  }

  /** Dispatch order: round by round, each owner's next item in rotation order. */
  @Override
  public Iterator<T> iterator() {
    List<Iterator<T>> lines = new ArrayList<>();
    rotation.values().forEach(line -> lines.add(line.iterator()));
    return new Iterator<>() {
      private int at;

      @Override
      public boolean hasNext() {
        return !lines.isEmpty();
      }

      @Override
      public T next() {
        if (lines.isEmpty()) {
          throw new NoSuchElementException();
        }
        Iterator<T> line = lines.get(at);
        T item = line.next();
        if (line.hasNext()) {
          at++;
        } else {
          lines.remove(at);
        }
        if (at >= lines.size()) {
          at = 0;
        }
        return item;
      }
    };
  }
}
