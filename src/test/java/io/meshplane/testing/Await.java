package io.meshplane.testing;

import io.vertx.core.Future;
import io.vertx.ext.web.client.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.BooleanSupplier;
import java.util.function.Predicate;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The one way tests wait: for a fact (a condition, or a value read again until it passes a test), with
 * a deadline and a short poll, never for a fixed time. A wait that runs out fails with what was awaited
 * and the last value seen. To show that something did NOT happen, wait for a counter or position that
 * proves the moment it could have happened was processed (a flush count, the change log's position, an
 * operation's version), then assert.
 *
 * <p>A read that throws fails the wait at once (the exception is the cause): a wait is for a value, not
 * for errors to stop.
 */
public final class Await {
  /** Long enough for a loaded CI machine; a passing wait returns as soon as its fact holds. */
  public static final long DEFAULT_MS = 15_000;
  /** Short, and no faster than a panel session's default rate (20 requests a second). */
  private static final long POLL_MS = 50;

  private Await() {}

  /** Waits up to {@link #DEFAULT_MS} until {@code fact} holds. */
  public static void until(String what, BooleanSupplier fact) {
    until(what, DEFAULT_MS, fact);
  }

  /** Waits up to {@code timeoutMs} until {@code fact} holds. */
  public static void until(String what, long timeoutMs, BooleanSupplier fact) {
    until(what, timeoutMs, fact::getAsBoolean, held -> held);
  }

  /** Reads {@code read} until its value passes {@code done} (up to {@link #DEFAULT_MS}) and returns that value. */
  public static <T> T until(String what, Callable<T> read, Predicate<? super T> done) {
    return until(what, DEFAULT_MS, read, done);
  }

  /** Reads {@code read} until its value passes {@code done} (up to {@code timeoutMs}) and returns that value. */
  public static <T> T until(String what, long timeoutMs, Callable<T> read, Predicate<? super T> done) {
    long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMs);
    while (true) {
      T value;
      try {
        value = read.call();
      } catch (Exception e) {
        throw new AssertionError("while waiting until " + what + ": the read failed: " + e, e);
      }
      if (done.test(value)) return value;
      if (System.nanoTime() - deadline > 0) {
        throw new AssertionError("timed out after " + timeoutMs + " ms waiting until " + what + "; last value seen: " + describe(value));
      }
      pause();
    }
  }

  /** The result of a Vert.x future, waited for up to {@code timeoutMs}; a failed future rethrows its cause. */
  public static <T> T result(String what, long timeoutMs, Future<T> future) {
    try {
      return future.await(timeoutMs, TimeUnit.MILLISECONDS);
    } catch (TimeoutException e) {
      throw new AssertionError("timed out after " + timeoutMs + " ms waiting for " + what, e);
    }
  }

  /**
   * Waits until {@code regex} matches the text of {@code log} (a child process's output) and returns the
   * match's first group ("" without one); fails at once if {@code process} (when given) has exited.
   */
  public static String inLog(Path log, String regex, Process process, long timeoutMs) {
    Pattern pattern = Pattern.compile(regex);
    String text = until("'" + regex + "' in " + log, timeoutMs, () -> {
      String t = Files.exists(log) ? Files.readString(log) : "";
      if (!pattern.matcher(t).find() && process != null && !process.isAlive()) {
        throw new AssertionError("the process exited (" + process.exitValue() + ") before '" + regex + "' was logged: " + t);
      }
      return t;
    }, t -> pattern.matcher(t).find());
    Matcher m = pattern.matcher(text);
    m.find();
    return m.groupCount() == 0 || m.group(1) == null ? "" : m.group(1);
  }

  /** An HTTP answer shows its status and body; anything else its toString. */
  private static String describe(Object value) {
    if (value instanceof HttpResponse<?> r) return r.statusCode() + " " + r.bodyAsString();
    return String.valueOf(value);
  }

  private static void pause() {
    try {
      Thread.sleep(POLL_MS); // the poll interval between two reads of a fact: not synchronisation
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new AssertionError("interrupted while waiting", e);
    }
  }
}
