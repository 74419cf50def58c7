package io.meshplane.agent;

import io.meshplane.common.Blocking;
import io.meshplane.common.Durations;
import io.vertx.core.DeploymentOptions;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.VertxOptions;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.io.PrintStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The fleet simulator ({@code meshplane simulate}): many nodes in one process over the same protocol
 * code as the reference agent ({@link AgentSession}, {@link Coordinators}, {@link Backoff}), without a
 * state dir or a listener. No thread per node: the nodes are split over a few shards, one per event
 * loop, each driving its nodes with plain timers; one shared HTTP client with a bounded pool. A node
 * costs its session (about 1 KiB, most of it the credential) and nothing else between heartbeats.
 *
 * <p>Every simulated node enrolls with its own name ({@code <prefix>-<run>-<n>}) and gets its own
 * credential, at most {@code --concurrency} enrollments in flight; its first heartbeat falls uniformly
 * within one interval after its enrollment, then it beats at {@code --interval} (± 10 %) whatever
 * interval the coordinator answers, executing commands like the agent. The run ends when {@code
 * --duration} has passed since the start (enrollment included), or at once when the coordinator refuses
 * the enrollment token.
 */
final class Simulator {
  static final int MAX_NODES = 1_000_000;
  static final Duration MAX_DURATION = Duration.ofHours(24);
  static final long PERIOD_MS = 10_000;

  /** What the simulator is told on its command line. */
  /**
   * @param policyChurn with {@code policyToken}: every this long, the team's policy is replaced (PUT
   *     /v1/acl) so that the rules of the nodes in its grants change; {@link Duration#ZERO}: no churn
   * @param finalCheck after {@code duration}: settle, then check every node's versions ({@link FinalCheck})
   * @param certificates every node makes its own ECDSA P-256 key and gets a MeshCA certificate through its heartbeats ({@link AgentPki})
   * @param skewClocks each node's own certificate handling runs at its skewed clock ({@link SimPairs#skewMs}), not only the pair checks
   * @param control a file of commands appended while the run goes on ({@link SimControl}: part of the fleet offline, back); null: none
   * @param ingressTag the nodes whose tags include it get a stand-in ingress edge ({@link SimEdge}); null: none
   */
  public record Settings(List<Coordinators.Target> coordinators, String enrollToken, int nodes, Duration interval, Duration duration,
      String namePrefix, List<String> tags, int spreadTags, int concurrency, Duration policyChurn, String policyToken, Watch watch,
      boolean finalCheck, boolean certificates, boolean skewClocks, java.nio.file.Path control, String ingressTag) {
    public Settings {
      coordinators = List.copyOf(coordinators);
      tags = List.copyOf(tags);
      if (watch == null) watch = Watch.OFF;
      if (policyChurn == null) policyChurn = Duration.ZERO;
      if (!policyChurn.isZero() && (policyToken == null || policyToken.isBlank())) throw new IllegalArgumentException("--policy-churn needs --policy-token");
      if (nodes < 1 || nodes > MAX_NODES) throw new IllegalArgumentException("--nodes must be 1 to " + MAX_NODES);
      if (duration.isNegative() || duration.isZero() || duration.compareTo(MAX_DURATION) > 0) {
        throw new IllegalArgumentException("--duration must be more than 0 and at most 24h");
      }
    }
  }

  /**
   * {@code --watch}: every node holds a watch stream; over HTTP/2 ({@code --watch-http2}) up to {@code
   * streamsPerConnection} of them per connection, else one HTTP/1.1 connection each; every client connects
   * from one of {@code sourceAddresses} (empty: the system's choice).
   */
  public record Watch(boolean on, boolean http2, int streamsPerConnection, List<String> sourceAddresses) {
    public static final Watch OFF = new Watch(false, true, 1000, List.of());

    public Watch {
      sourceAddresses = List.copyOf(sourceAddresses);
    }
  }

  private final Settings settings;
  private final PrintStream out;
  private final SimStats stats;
  private final String run = runId();
  private final CountDownLatch aborted = new CountDownLatch(1);
  private volatile String abortReason;
  private volatile boolean stopping;
  /** --final-check: the churn has stopped (settling), then the regular heartbeats have too (checking). */
  private volatile boolean settling;
  private volatile boolean checking;
  /** When a node's peers or acl version last moved (System.nanoTime), for the settle period of --final-check. */
  private final AtomicLong versionsMovedNanos = new AtomicLong(System.nanoTime());
  private final List<SimShard> shards = new ArrayList<>();
  /** The moment every node had enrolled: where the steady window starts (null until then). */
  private SimStats.Snapshot allEnrolled;
  private volatile boolean signalled;

  // --policy-churn: the team and environment (from the first enrollment answer), the change under way
  private volatile String team;
  private volatile String environment;
  private final AtomicInteger churnIndex = new AtomicInteger();
  private volatile long churnStartNanos;
  private volatile long churnVersion = -1;
  private final LongAdder churnReached = new LongAdder();
  private final AtomicLong churnLastNanos = new AtomicLong();

  private void markAllEnrolled() {
    synchronized (out) {
      if (allEnrolled == null) allEnrolled = stats.snapshot();
    }
  }

  public Simulator(Settings settings, PrintStream out) {
    this.settings = settings;
    this.out = out;
    this.stats = new SimStats(settings.watch().on());
  }

  Settings settings() {
    return settings;
  }

  SimStats stats() {
    return stats;
  }

  boolean stopping() {
    return stopping;
  }

  /** --final-check is under way: no regular heartbeat goes out any more. */
  boolean checking() {
    return checking;
  }

  /** A node's peers or acl version moved (a heartbeat or stream answer applied). */
  void versionsMoved() {
    versionsMovedNanos.set(System.nanoTime());
  }

  /** A node enrolled: the team and environment of the first one (for --policy-churn), and the moment all had. */
  void enrolledOne(JsonObject answer) {
    if (team == null && answer.getValue("node") instanceof JsonObject n && n.getValue("team") instanceof String t
        && n.getValue("environment") instanceof String e) {
      environment = e;
      team = t;
    }
    stats.enrolled.increment();
    if (stats.enrolled.sum() == settings.nodes()) markAllEnrolled();
  }

  private static String runId() {
    String alphabet = "0123456789abcdefghijklmnopqrstuvwxyz";
    StringBuilder sb = new StringBuilder(6);
    for (int i = 0; i < 6; i++) sb.append(alphabet.charAt(ThreadLocalRandom.current().nextInt(alphabet.length())));
    return sb.toString();
  }

  /**
   * The tags of node {@code n}: {@code --tags}, where with {@code --spread-tags N} a tag ending in a
   * number k becomes the same tag ending in {@code (k + n) mod N} ({@code tag:t0} spreads the fleet over
   * {@code tag:t0} to {@code tag:t<N-1>}).
   */
  List<String> nodeTags(int n) {
    if (settings.spreadTags() <= 0) return settings.tags();
    List<String> out = new ArrayList<>(settings.tags().size());
    for (String t : settings.tags()) {
      Matcher m = NUMBERED.matcher(t);
      out.add(m.matches() ? m.group(1) + (Long.parseLong(m.group(2)) + n) % settings.spreadTags() : t);
    }
    return out;
  }

  static final Pattern NUMBERED = Pattern.compile("^(tag:.*?)(\\d{1,9})$");

  /** The name of node {@code n}. */
  String nodeName(int n) {
    return settings.namePrefix() + "-" + run + "-" + n;
  }

  /**
   * Runs the simulation to its end (blocking).
   *
   * @return the exit code: 0 done, 1 no node could enroll, 3 the enrollment token was refused, 4 {@code --final-check} found
   *     nodes behind, unanswered or unchecked
   */
  public int run() {
    int loops = Math.max(1, Math.min(Runtime.getRuntime().availableProcessors(), 4));
    Vertx vertx = Vertx.vertx(new VertxOptions().setEventLoopPoolSize(loops).setWorkerPoolSize(1).setInternalBlockingPoolSize(1));
    int connections = settings.concurrency();
    // a heartbeat waiting a few seconds for a connection is still a heartbeat: the queue holds up to a tenth of the fleet
    int waiting = Math.max(Math.max(256, connections * 16), settings.nodes() / 10);
    Watch watch = settings.watch();
    Coordinators coordinators = new Coordinators(vertx, settings.coordinators(), connections, waiting,
        watch.sourceAddresses().isEmpty() ? null : watch.sourceAddresses().get(0));
    WatchTransport transport = watch.on()
        ? new WatchTransport(vertx, settings.coordinators(), new WatchTransport.Settings(watch.http2(), watch.streamsPerConnection(),
            watch.sourceAddresses(), settings.nodes()))
        : null;
    long intervalMs = settings.interval().toMillis();
    out.printf(Locale.ROOT, "[sim] %d nodes named %s-%s-<n> against %s: interval %s, duration %s, at most %d requests in flight per coordinator%n",
        settings.nodes(), settings.namePrefix(), run, String.join(",", settings.coordinators().stream().map(Coordinators.Target::url).toList()),
        Durations.format(settings.interval()), Durations.format(settings.duration()), connections);
    if (watch.on()) {
      out.printf(Locale.ROOT, "[sim] watch streams: %s%s%n", watch.http2() ? "HTTP/2 (prior knowledge), at most " + watch.streamsPerConnection()
          + " streams per connection" : "HTTP/1.1, one connection per stream", watch.sourceAddresses().isEmpty() ? ""
          : ", from " + String.join(",", watch.sourceAddresses()));
    }
    out.flush();
    // SIGTERM or Ctrl-C: end the run early, still with its final summary
    CountDownLatch finished = new CountDownLatch(1);
    Thread hook = new Thread(() -> {
      signalled = true;
      aborted.countDown();
      try {
        finished.await(10, TimeUnit.SECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }, "meshplane-simulate-shutdown");
    Runtime.getRuntime().addShutdownHook(hook);
    SimStats.Snapshot start = stats.snapshot();
    long deadline = System.nanoTime() + settings.duration().toNanos();
    int enrollSlots = Math.max(1, settings.concurrency() / loops);
    try {
      for (int k = 0; k < loops; k++) {
        SimShard shard = new SimShard(this, k, loops, coordinators, transport, intervalMs, enrollSlots);
        shards.add(shard);
        Blocking.await(vertx.deployVerticle(shard, new DeploymentOptions()), Duration.ofSeconds(10), "starting simulator shard " + k);
      }
      SimStats.Snapshot[] previous = {start};
      vertx.setPeriodic(PERIOD_MS, id -> {
        synchronized (out) {
          if (stopping) return; // the final summary is the last line
          SimStats.Snapshot now = stats.snapshot();
          out.println(SimStats.period(previous[0], now, (now.nanos() - start.nanos()) / 1_000_000_000L, settings.nodes()) + stats.certificates(" | ") + stats.ingress(" | "));
          out.flush();
          previous[0] = now;
        }
      });
      if (!settings.policyChurn().isZero()) {
        vertx.setPeriodic(settings.policyChurn().toMillis(), id -> churn(coordinators));
      }
      if (settings.control() != null) {
        control = new SimControl(settings.control(), this::control, why -> say("[sim] control: refused " + why));
        control.start();
      }
      long remaining = deadline - System.nanoTime();
      if (remaining > 0) aborted.await(remaining, TimeUnit.NANOSECONDS);
      if (settings.finalCheck() && aborted.getCount() > 0) finalCheckReport = finalCheck();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (Exception e) {
      abortReason = "the simulator could not start: " + e.getMessage();
    } finally {
      synchronized (out) {
        stopping = true;
      }
      if (control != null) control.stop();
    }
    SimStats.Snapshot end = stats.snapshot();
    if (signalled) out.println("[sim] stopped by a signal before --duration had passed");
    SimStats.Snapshot steadyFrom;
    synchronized (out) {
      steadyFrom = allEnrolled;
      if (churnIndex.get() > 0) out.println(churnReport());
    }
    if (finalCheckReport != null) out.println(finalCheckReport);
    out.println(stats.total(start, steadyFrom, end, settings.nodes()));
    out.flush();
    try {
      Blocking.await(vertx.close(), Duration.ofSeconds(5), "closing Vert.x");
    } catch (Exception e) {
      // closing is best effort: the process ends anyway
    }
    finished.countDown();
    try {
      Runtime.getRuntime().removeShutdownHook(hook);
    } catch (IllegalStateException shuttingDown) {
      return 0; // the JVM is already exiting (a signal): its status is the signal's
    }
    if (abortReason != null) {
      System.err.println("simulate: " + abortReason);
      return 3;
    }
    if (end.enrolled() == 0) {
      System.err.println("simulate: no node could enroll (see the errors above)");
      return 1;
    }
    if (finalCheckFailed) {
      System.err.println("simulate: the final check found nodes behind the coordinators, unanswered or unchecked (see its line)");
      return 4;
    }
    return 0;
  }

  private SimControl control;

  /** A --control command (on the control's thread): every shard takes its part offline or brings it back; one line when all have. */
  private void control(SimControl.Command c) {
    long t0 = System.nanoTime();
    List<Future<Integer>> all = new ArrayList<>();
    for (SimShard shard : shards) all.add(c.online() ? shard.online() : shard.offline(c.fraction()));
    Future.all(all).onComplete(ar -> {
      int n = 0;
      for (Future<Integer> f : all) n += f.succeeded() ? f.result() : 0;
      say(String.format(Locale.ROOT, "[sim] control: %s at %d ms: %d nodes %s in %.1f ms; offline now %d", SimControl.describe(c), System.currentTimeMillis(), n,
          c.online() ? "back" : "taken offline", (System.nanoTime() - t0) / 1e6, stats.offlineNow.sum()));
    });
  }

  private void say(String line) {
    synchronized (out) {
      if (stopping) return;
      out.println(line);
      out.flush();
    }
  }

  private volatile boolean finalCheckFailed;
  private String finalCheckReport;

  /**
   * {@code --final-check} ({@link FinalCheck}): stops the policy churn, waits until no node's versions moved
   * for {@link FinalCheck#QUIET_MS} (at most {@link FinalCheck#SETTLE_MAX_MS}), stops the regular heartbeats,
   * and has every enrolled node send one heartbeat with the versions it holds. Bounded: the check itself
   * gets at most 60 s plus 10 ms per node. Ends early on a signal.
   *
   * @return its summary line
   */
  private String finalCheck() throws InterruptedException {
    settling = true;
    long t0 = System.nanoTime();
    versionsMoved(); // a churn PUT may be on its way: its change counts from now
    boolean quiet = false;
    while (aborted.getCount() > 0) {
      long now = System.nanoTime();
      if (now - versionsMovedNanos.get() >= FinalCheck.QUIET_MS * 1_000_000) {
        quiet = true;
        break;
      }
      if (now - t0 >= FinalCheck.SETTLE_MAX_MS * 1_000_000) break;
      aborted.await(200, TimeUnit.MILLISECONDS);
    }
    long settleMs = (System.nanoTime() - t0) / 1_000_000;
    checking = true;
    synchronized (out) {
      out.printf(Locale.ROOT, "[sim] final check: settled for %.1f s (%s), every enrolled node sends one heartbeat with the versions it holds%n",
          settleMs / 1e3, quiet ? "quiet" : "versions still moving");
      out.flush();
    }
    FinalCheck check = new FinalCheck();
    long t1 = System.nanoTime();
    List<Future<Void>> all = new ArrayList<>();
    for (SimShard shard : shards) all.add(shard.finalCheck(check));
    CountDownLatch done = new CountDownLatch(1);
    Future.join(all).onComplete(ar -> done.countDown());
    long bound = 60_000 + 10L * settings.nodes();
    long waited = 0;
    while (done.getCount() > 0 && aborted.getCount() > 0 && waited < bound) {
      done.await(200, TimeUnit.MILLISECONDS);
      waited = (System.nanoTime() - t1) / 1_000_000;
    }
    long enrolled = stats.enrolled.sum();
    finalCheckFailed = !check.passed(enrolled);
    String line = check.summary(enrolled, settleMs, quiet, (System.nanoTime() - t1) / 1_000_000, settings.watch().on());
    return done.getCount() > 0 ? line + "; the check did not finish (" + (aborted.getCount() == 0 ? "stopped" : "after " + bound / 1000 + " s") + ")" : line;
  }

  /**
   * One policy change of {@code --policy-churn} (once every node has enrolled: before that, enrollments
   * change rules anyway): first the report of the previous one, then a PUT of the next policy. Its
   * grants join the spread tags in pairs, {@code tag:<base><2i>} and {@code tag:<base><2i+1>}, with the
   * direction and the ports of change k, so that every node on those tags gets new rules.
   */
  private void churn(Coordinators coordinators) {
    synchronized (out) {
      if (stopping || settling || allEnrolled == null || team == null) return;
      if (churnIndex.get() > 0) out.println(churnReport());
    }
    int k = churnIndex.get() + 1;
    String base = null;
    for (String t : settings.tags()) {
      Matcher m = NUMBERED.matcher(t);
      if (m.matches()) {
        base = m.group(1);
        break;
      }
    }
    int grants = Math.min(50, settings.spreadTags() / 2);
    JsonArray list = new JsonArray();
    for (int i = 0; i < grants; i++) {
      list.add(new JsonObject().put("src", new JsonArray().add(base + (2 * i + k % 2))).put("dst", new JsonArray().add(base + (2 * i + 1 - k % 2)))
          .put("ports", new JsonArray().add("tcp/" + (1000 + i + 100 * (k % 100)))));
    }
    // counted from before the PUT: a node may get its new rules before the PUT's own answer arrives
    churnReached.reset();
    churnLastNanos.set(0);
    churnVersion = -1;
    churnStartNanos = System.nanoTime();
    churnIndex.set(k);
    String path = "/acl?team=" + team + "&environment=" + environment;
    putPolicy(coordinators, path, new JsonObject().put("grants", list).toBuffer(), 1)
        .onComplete(ar -> {
          Reply r = ar.result();
          long ms = (System.nanoTime() - churnStartNanos) / 1_000_000;
          synchronized (out) {
            if (r.status() == 200 && r.body() != null && r.body().getValue("version") instanceof Number v) {
              churnVersion = v.longValue();
              out.printf(Locale.ROOT, "[sim] policy change %d: version %d of %s/%s stored in %d ms (%d grants)%n", k, churnVersion, team, environment,
                  ms, grants);
            } else {
              stats.error("policy_" + (r.error() == null ? "invalid_answer" : r.error()));
              out.printf(Locale.ROOT, "[sim] policy change %d refused: %s%n", k, r.describe());
            }
            out.flush();
          }
        });
  }

  /** The coordinator the policy changes go to: the first URL, the next one after a failure there (a replica down). */
  private volatile int churnTarget;

  private Future<Reply> putPolicy(Coordinators coordinators, String path, io.vertx.core.buffer.Buffer body, int attempt) {
    int index = churnTarget;
    return coordinators.send(HttpMethod.PUT, index, path, "Bearer " + settings.policyToken(), body).compose(r -> {
      if (!r.coordinatorsFault() || coordinators.size() < 2) return Future.succeededFuture(r);
      churnTarget = (index + 1) % coordinators.size();
      return attempt < coordinators.size() ? putPolicy(coordinators, path, body, attempt + 1) : Future.succeededFuture(r);
    });
  }

  /** A node's rules changed in a heartbeat answer: counted once per node for the change under way. */
  void rulesChanged(int[] counted, int slot) {
    int k = churnIndex.get();
    if (k == 0 || counted[slot] == k) return;
    counted[slot] = k;
    churnReached.increment();
    churnLastNanos.accumulateAndGet(System.nanoTime(), Math::max);
  }

  private String churnReport() {
    long last = churnLastNanos.get();
    return String.format(Locale.ROOT, "[sim] policy change %d (version %d): %d nodes got new rules%s", churnIndex.get(), churnVersion, churnReached.sum(),
        last == 0 ? "" : String.format(Locale.ROOT, ", the last %.1f s after the PUT", (last - churnStartNanos) / 1e9));
  }

  void abort(String reason) {
    if (abortReason == null) abortReason = reason;
    aborted.countDown();
  }
}
