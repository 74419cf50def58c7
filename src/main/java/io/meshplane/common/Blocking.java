package io.meshplane.common;

import io.vertx.core.Context;
import io.vertx.core.Future;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

/**
 * Waits for a future from a plain thread: the main thread at start, the shutdown hook, the CLI.
 * Refuses to run on an event loop, where waiting would stall every request on that loop.
 */
public final class Blocking {
  private Blocking() {}

  public static <T> T await(Future<T> future, Duration timeout, String what) {
    if (Context.isOnEventLoopThread()) throw new IllegalStateException("Blocking.await on an event loop: " + what);
    CountDownLatch done = new CountDownLatch(1);
    AtomicReference<T> value = new AtomicReference<>();
    AtomicReference<Throwable> failure = new AtomicReference<>();
    future.onComplete(ar -> {
      if (ar.succeeded()) value.set(ar.result());
      else failure.set(ar.cause());
      done.countDown();
    });
    try {
      if (!done.await(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
        throw new IllegalStateException(what + " did not finish within " + timeout.toSeconds() + " s");
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(what + " was interrupted", e);
    }
    if (failure.get() != null) {
      throw new IllegalStateException(what + " failed: " + failure.get().getMessage(), failure.get());
    }
    return value.get();
  }
}
