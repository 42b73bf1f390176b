package dev.kernelrunner.leaderboard;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;

/**
 * A leaderboard's ranking, a pure function of its candidates (each user's best accepted result). An entry's
 * figure is the geometric mean over its tests of the published runtimes; its interval is the geometric means of
 * the tests' 95% confidence intervals for the median, from the timed samples by order statistics (no assumption
 * on their distribution). Taking the tests' bounds together is conservative: as if the tests were perfectly
 * correlated. An entry whose interval overlaps the one ranked just above it shares that rank, and both are marked
 * a tie (ranks 1, 2, 2, 4 ...). A candidate whose samples do not give its published times (a test without samples,
 * or whose samples' median is not its runtime) cannot have an interval and is left out.
 */
public final class Board {
  private Board() {}

  /** The 97.5% point of the standard normal distribution. */
  private static final double Z = 1.959964;
  /** How far a test's published runtime may be from its samples' median (rounding of stored numbers). */
  private static final double SAME = 1e-6;

  public record Test(String testId, double runtimeMs, List<Double> samples) {}

  public record Candidate(String submissionId, String userId, String createdAt, Double speedup, List<Test> tests) {}

  public record Interval(double lowMs, double highMs) {
    boolean overlaps(Interval other) {
      return lowMs <= other.highMs && other.lowMs <= highMs;
    }
  }

  public record Entry(int rank, boolean tie, Candidate candidate, double geomeanMs, Interval interval) {}

  /** The ranking of {@code candidates}: best (lowest geometric mean) first; left-out candidates are dropped. */
  public static List<Entry> rank(List<Candidate> candidates) {
    record Scored(Candidate candidate, double geomean, Interval interval) {}
    List<Scored> scored = new ArrayList<>();
    for (Candidate candidate : candidates) {
      Interval interval = interval(candidate.tests());
      if (interval != null) {
        scored.add(new Scored(candidate, geomean(candidate.tests().stream().map(Test::runtimeMs).toList()), interval));
      }
    }
    scored.sort(Comparator.comparingDouble(Scored::geomean)); // stable: equal figures keep the earlier first
    List<Entry> entries = new ArrayList<>();
    boolean[] tie = new boolean[scored.size()];
    int[] rank = new int[scored.size()];
    for (int i = 0; i < scored.size(); i++) {
      rank[i] = i + 1;
      if (i > 0 && scored.get(i).interval().overlaps(scored.get(i - 1).interval())) {
        rank[i] = rank[i - 1];
        tie[i] = true;
        tie[i - 1] = true;
      }
    }
    for (int i = 0; i < scored.size(); i++) {
      Scored s = scored.get(i);
      entries.add(new Entry(rank[i], tie[i], s.candidate(), s.geomean(), s.interval()));
    }
    return entries;
  }

  /** The geometric mean of the tests' confidence bounds, or null when a test's samples cannot give one. */
  static Interval interval(List<Test> tests) {
    if (tests.isEmpty()) {
      return null;
    }
    List<Double> lows = new ArrayList<>();
    List<Double> highs = new ArrayList<>();
    for (Test test : tests) {
      Interval median = medianInterval(test.samples());
      if (median == null || Math.abs(median(test.samples()) - test.runtimeMs()) > SAME * Math.max(1, test.runtimeMs())
          || !(test.runtimeMs() > 0)) {
        return null;
      }
      lows.add(median.lowMs());
      highs.add(median.highMs());
    }
    return new Interval(geomean(lows), geomean(highs));
  }

  /**
   * A 95% confidence interval for the median of {@code samples}: the order statistics at ranks n/2 -+ 1.96
   * sqrt(n)/2 (the normal approximation to the binomial); for fewer than 6 samples, their whole range (no pair
   * of order statistics reaches 95% there).
   */
  static Interval medianInterval(List<Double> samples) {
    if (samples == null || samples.isEmpty() || samples.stream().anyMatch(s -> s == null || !(s >= 0))) {
      return null;
    }
    List<Double> sorted = samples.stream().sorted().toList();
    int n = sorted.size();
    double half = Z * Math.sqrt(n) / 2;
    int low = Math.max(1, (int) Math.floor(n / 2.0 - half));          // 1-based ranks
    int high = Math.min(n, (int) Math.ceil(n / 2.0 + 1 + half));
    return new Interval(sorted.get(low - 1), sorted.get(high - 1));
  }

  static double median(List<Double> samples) {
    List<Double> sorted = samples.stream().sorted().toList();
    int n = sorted.size();
    return n % 2 == 1 ? sorted.get(n / 2) : (sorted.get(n / 2 - 1) + sorted.get(n / 2)) / 2;
  }

  static double geomean(List<Double> values) {
    double logs = 0;
    for (double v : values) {
      logs += Math.log(v);
    }
    return Math.exp(logs / values.size());
  }
}
