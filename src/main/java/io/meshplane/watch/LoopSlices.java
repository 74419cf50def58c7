package io.meshplane.watch;

import io.vertx.core.Context;
import io.vertx.core.internal.ContextInternal;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

/**
 * Runs work on an event loop a slice at a time, letting the loop read its sockets between two
 * slices: a slice ends after {@code max} items or {@code nanos}, whichever comes first, and the next
 * one goes to the loop's timer queue with no delay, not to its task queue. Netty drains a loop's task
 * queue for up to a second before it reads its sockets again (it looks at the clock every 64 tasks), so
 * slices chained as tasks hold every request of that loop (heartbeats) behind all of them; a timer task
 * is taken up only after the loop has read its sockets, so a request waits for one slice at most.
 */
final class LoopSlices {
  private LoopSlices() {}

  /** Runs {@code each} over {@code items} on {@code context}'s event loop, in slices. */
  static <T> void run(Context context, List<T> items, int max, long nanos, Consumer<T> each) {
    ContextInternal loop = (ContextInternal) context;
    loop.runOnContext(v -> slice(loop, items, 0, max, nanos, each));
  }

  private static <T> void slice(ContextInternal loop, List<T> items, int from, int max, long nanos, Consumer<T> each) {
    int end = Math.min(items.size(), from + max);
    long deadline = System.nanoTime() + nanos;
    int i = from;
    while (i < end) {
      each.accept(items.get(i++));
      if (((i - from) & 15) == 0 && System.nanoTime() > deadline) break;
    }
    if (i < items.size()) {
      int next = i;
      loop.nettyEventLoop().schedule(() -> loop.emit(v -> slice(loop, items, next, max, nanos, each)), 0, TimeUnit.NANOSECONDS);
    }
  }
}
