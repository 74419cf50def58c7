package io.meshplane.agent;

import io.vertx.core.json.JsonObject;
import java.util.Locale;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.LongAdder;

/**
 * {@code meshplane simulate --final-check}: whether every simulated node ends the run with the versions
 * the coordinators hold for it. After {@code --duration} the policy churn stops and the fleet settles
 * (until no node's peers or acl version moved for {@link #QUIET_MS}, at most {@link #SETTLE_MAX_MS}); then
 * the regular heartbeats stop and every enrolled node sends one more heartbeat with the versions it holds
 * (from its stream and heartbeat answers alike). An answer whose {@code peers} or {@code acl} is not
 * {@code unchanged} and carries a higher version than the node held means the node had missed a change:
 * it is counted behind, per kind, with a few node ids as examples. A node whose check heartbeat got no
 * answer after {@link #ATTEMPTS} tries (failing over like any heartbeat) is counted unanswered, apart.
 * With {@code --watch} it also counts the nodes whose stream was not open at that moment. Thread-safe
 * (every shard's event loop counts).
 */
final class FinalCheck {
  /** The fleet has settled once no node's versions moved for this long. */
  static final long QUIET_MS = 5_000;
  /** The settle period ends after this long even if versions still move (they are checked anyway). */
  static final long SETTLE_MAX_MS = 60_000;
  /** Tries of a node's check heartbeat (failing over between coordinators) before it counts as unanswered. */
  static final int ATTEMPTS = 3;
  static final int PEERS = 1;
  static final int ACL = 2;
  private static final int EXAMPLES = 5;

  final LongAdder checked = new LongAdder();
  final LongAdder current = new LongAdder();
  final LongAdder behind = new LongAdder();
  final LongAdder behindPeers = new LongAdder();
  final LongAdder behindAcl = new LongAdder();
  final LongAdder unanswered = new LongAdder();
  final LongAdder streaming = new LongAdder();
  final LongAdder notStreaming = new LongAdder();
  private final ConcurrentLinkedQueue<String> behindExamples = new ConcurrentLinkedQueue<>();
  private final ConcurrentLinkedQueue<String> unansweredExamples = new ConcurrentLinkedQueue<>();
  private final ConcurrentLinkedQueue<String> notStreamingExamples = new ConcurrentLinkedQueue<>();
  private final AtomicInteger examples = new AtomicInteger();

  /**
   * What a heartbeat answer says of the versions a node sent as {@code known}: {@link #PEERS} and/or
   * {@link #ACL} when that block is not {@code unchanged} and its version is above the one held (a full
   * answer at the version held, as for a node that holds version 0, is not a missed change); 0: current.
   */
  static int behind(JsonObject answer, long peersHeld, long aclHeld) {
    int b = 0;
    if (answer != null && newer(answer.getValue("peers"), peersHeld)) b |= PEERS;
    if (answer != null && newer(answer.getValue("acl"), aclHeld)) b |= ACL;
    return b;
  }

  private static boolean newer(Object block, long held) {
    if (!(block instanceof JsonObject o) || Boolean.TRUE.equals(o.getValue("unchanged"))) return false;
    return o.getValue("version") instanceof Number v && v.longValue() > Math.max(0, held);
  }

  /** One node's check heartbeat was answered: {@code behindBits} from {@link #behind}. */
  void answered(String nodeId, JsonObject answer, long peersHeld, long aclHeld) {
    int bits = behind(answer, peersHeld, aclHeld);
    checked.increment();
    if (bits == 0) {
      current.increment();
      return;
    }
    behind.increment();
    StringBuilder sb = new StringBuilder(nodeId);
    if ((bits & PEERS) != 0) {
      behindPeers.increment();
      sb.append(" peers ").append(peersHeld).append("<").append(version(answer, "peers"));
    }
    if ((bits & ACL) != 0) {
      behindAcl.increment();
      sb.append(" acl ").append(aclHeld).append("<").append(version(answer, "acl"));
    }
    example(behindExamples, sb.toString());
  }

  private static Object version(JsonObject answer, String block) {
    return answer.getValue(block) instanceof JsonObject o ? o.getValue("version") : null;
  }

  void unanswered(String nodeId, Reply r) {
    unanswered.increment();
    example(unansweredExamples, nodeId + " " + r.describe());
  }

  /** With --watch: whether the node's stream was open when its check began; {@code lostForMs} since its loss (-1: never opened). */
  void stream(String nodeId, boolean open, long lostForMs) {
    if (open) {
      streaming.increment();
      return;
    }
    notStreaming.increment();
    example(notStreamingExamples, nodeId + (lostForMs >= 0 ? String.format(Locale.ROOT, " (lost %.1f s before)", lostForMs / 1e3) : " (never opened)"));
  }

  private void example(ConcurrentLinkedQueue<String> q, String s) {
    if (q.size() < EXAMPLES && examples.incrementAndGet() < 1000) q.add(s);
  }

  /**
   * The summary line: {@code [sim] final check: 1500 of 1500 enrolled nodes checked after a settle of
   * 5.3 s (quiet), 1500 current, 0 behind (peers 0, acl 0), 0 unanswered; streaming 1500, not 0; in 1.2 s}
   * followed by examples of node ids for what is not zero.
   */
  String summary(long enrolled, long settleMs, boolean quiet, long tookMs, boolean watch) {
    StringBuilder sb = new StringBuilder(256);
    sb.append(String.format(Locale.ROOT, "[sim] final check: %d of %d enrolled nodes checked after a settle of %.1f s (%s), %d current, "
        + "%d behind (peers %d, acl %d), %d unanswered", checked.sum(), enrolled, settleMs / 1e3,
        quiet ? "quiet for " + QUIET_MS / 1000 + " s" : "still changing after " + SETTLE_MAX_MS / 1000 + " s",
        current.sum(), behind.sum(), behindPeers.sum(), behindAcl.sum(), unanswered.sum()));
    if (watch) sb.append(String.format(Locale.ROOT, "; streaming %d, not streaming %d", streaming.sum(), notStreaming.sum()));
    sb.append(String.format(Locale.ROOT, "; in %.1f s", tookMs / 1e3));
    if (!behindExamples.isEmpty()) sb.append("; behind e.g. ").append(String.join(", ", behindExamples));
    if (!unansweredExamples.isEmpty()) sb.append("; unanswered e.g. ").append(String.join(", ", unansweredExamples));
    if (!notStreamingExamples.isEmpty()) sb.append("; not streaming e.g. ").append(String.join(", ", notStreamingExamples));
    return sb.toString();
  }

  /** True when every enrolled node was checked and none was behind. */
  boolean passed(long enrolled) {
    return behind.sum() == 0 && unanswered.sum() == 0 && checked.sum() == enrolled;
  }
}
