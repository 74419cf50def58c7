package io.meshplane.watch;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.meshplane.testing.Await;
import io.vertx.core.Context;
import io.vertx.core.Vertx;
import io.vertx.core.http.HttpServer;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * What a whole-fleet change's writes may do to the heartbeats of their event loop: a request arriving on
 * the socket of a loop that is writing thousands of answers is answered between two slices, not after
 * all of them (Netty runs up to a second of queued tasks before it reads its sockets again).
 */
class LoopSlicesTest {
  private final Vertx vertx = Vertx.vertx();

  @AfterEach
  void close() {
    vertx.close().await();
  }

  @Test
  void aRequestOnTheLoopIsAnsweredBetweenTwoSlices() throws Exception {
    Context loop = vertx.getOrCreateContext();
    AtomicInteger done = new AtomicInteger();
    AtomicLong sum = new AtomicLong();
    CompletableFuture<Thread> serverThread = new CompletableFuture<>();
    CompletableFuture<HttpServer> listening = new CompletableFuture<>();
    loop.runOnContext(v -> vertx.createHttpServer()
        .requestHandler(r -> {
          serverThread.complete(Thread.currentThread());
          r.response().end(Integer.toString(done.get()));
        })
        .listen(0, "127.0.0.1")
        .onComplete(ar -> listening.complete(ar.result())));
    int port = listening.get(10, TimeUnit.SECONDS).actualPort();
    HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
    HttpRequest ask = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/")).build();
    client.send(ask, HttpResponse.BodyHandlers.ofString()); // the connection is open before the writes start

    int n = 20_000; // ~20 µs each: ~400 ms of the loop in all, in slices of at most 2 ms
    List<Integer> items = new ArrayList<>(n);
    for (int i = 0; i < n; i++) items.add(i);
    CompletableFuture<Thread> sliceThread = new CompletableFuture<>();
    LoopSlices.run(loop, items, 256, TimeUnit.MILLISECONDS.toNanos(2), i -> {
      sliceThread.complete(Thread.currentThread());
      long until = System.nanoTime() + 20_000;
      while (System.nanoTime() < until) Thread.onSpinWait();
      sum.addAndGet(i);
      done.incrementAndGet();
    });
    Await.until("the slices have started", () -> done.get() > 0);
    int seen = Integer.parseInt(client.send(ask, HttpResponse.BodyHandlers.ofString()).body());

    assertEquals(serverThread.get(), sliceThread.get(), "the request and the slices share one event loop");
    assertTrue(seen < n / 2, "answered between two slices, not after all of them: " + seen + " of " + n + " items were done");
    Await.until("every item runs", () -> done.get() == n);
    assertEquals((long) n * (n - 1) / 2, sum.get(), "each item once");
  }
}
