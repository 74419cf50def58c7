package io.meshplane.policy;

import io.meshplane.node.ChangeLog;
import io.meshplane.node.ChangeLog.NodeFacts;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.VerticleBase;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.TransactionPropagation;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Keeps this replica's {@link PeerModel} in step with the change log: loads a snapshot at start (and
 * whenever it has fallen behind what the log still holds), then applies new entries in seq order,
 * polling every {@value #POLL_MS} ms and at once when poked (a node event, a policy change on any
 * replica). One worker verticle per replica: entries are applied by one thread, in order, never on
 * an event loop (a policy change over many nodes takes milliseconds). Reads of the model go on
 * concurrently under the domains' locks.
 */
final class ChangeFeed extends VerticleBase {
  private static final Logger LOG = LoggerFactory.getLogger(ChangeFeed.class);
  static final long POLL_MS = 250;
  private static final int BATCH = 1000;
  /** How long log entries are kept: a replica further behind loads a snapshot instead. */
  static final long KEEP_SECONDS = 3600;

  private final Pool pool;
  private final ChangeLog log;
  private final PeerModel model;
  private final List<ChangeLog.Follower> followers;
  private final TreeMap<Long, List<Promise<Void>>> waiting = new TreeMap<>();
  private boolean polling;
  private boolean again;
  private long timer = -1;
  private long trimTimer = -1;

  ChangeFeed(Pool pool, ChangeLog log, PeerModel model, List<ChangeLog.Follower> followers) {
    this.followers = followers;
    this.pool = pool;
    this.log = log;
    this.model = model;
  }

  /**
   * Loads the model and the followers from a consistent snapshot: the clock, every node and every
   * current policy (and what each follower reads), in one REPEATABLE READ transaction.
   */
  static Future<Long> loadSnapshot(Pool pool, PeerModel model, List<ChangeLog.Follower> followers) {
    return pool.withTransaction(TransactionPropagation.NONE, tx -> tx.query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY").execute()
        .compose(v -> ChangeLog.clock(tx))
        .compose(seq -> ChangeLog.nodes(tx)
            .compose(nodes -> PolicyRepository.allCurrent(tx).map(policies -> {
              Map<String, PolicyDocument> docs = new HashMap<>();
              Map<String, Long> versions = new HashMap<>();
              for (PolicyRepository.Stored s : policies) {
                docs.put(s.team() + "/" + s.environment(), PolicyDocument.parse(s.policy()));
                versions.put(s.team() + "/" + s.environment(), s.version());
              }
              model.load(seq, nodes, docs, versions);
              return seq;
            }))
            .compose(s -> {
              Future<Void> chain = Future.succeededFuture();
              for (ChangeLog.Follower f : followers) chain = chain.compose(v -> f.load(tx, s));
              return chain.map(s);
            })));
  }

  @Override
  public Future<?> start() {
    timer = vertx.setPeriodic(POLL_MS, id -> poll());
    trimTimer = vertx.setPeriodic(300_000, id -> log.trim(KEEP_SECONDS)
        .onFailure(t -> LOG.debug("change log not trimmed: {}", t.getMessage())));
    return Future.succeededFuture();
  }

  @Override
  public Future<?> stop() {
    vertx.cancelTimer(timer);
    vertx.cancelTimer(trimTimer);
    return Future.succeededFuture();
  }

  /** Polls now (from any thread): something was just appended. */
  void poke() {
    context.runOnContext(v -> poll());
  }

  /** Completes once the model has applied the log up to {@code seq} (from any thread). */
  Future<Void> applied(long seq) {
    Promise<Void> p = Promise.promise();
    context.runOnContext(v -> {
      if (model.position() >= seq) {
        p.tryComplete();
      } else {
        waiting.computeIfAbsent(seq, k -> new ArrayList<>()).add(p);
        poll();
      }
    });
    return p.future();
  }

  private void poll() {
    if (polling) {
      again = true;
      return;
    }
    polling = true;
    again = false;
    long from = model.position();
    log.after(from, BATCH).compose(entries -> {
      if (!entries.isEmpty() && entries.get(0).seq() != from + 1) {
        LOG.warn("the change log no longer holds the entries after {} (this replica was behind for over {} s): loading a snapshot",
            from, KEEP_SECONDS);
        return loadSnapshot(pool, model, followers).map(seq -> true);
      }
      for (ChangeLog.Entry e : entries) {
        try {
          apply(e);
        } catch (RuntimeException ex) {
          // an entry this version cannot read (a newer replica during a rolling upgrade): skipped, one line
          LOG.warn("skipped change {} ({}): {}", e.seq(), e.kind(), ex.toString());
        }
        model.position(e.seq());
      }
      return Future.succeededFuture(entries.size() == BATCH);
    }).onComplete(ar -> {
      polling = false;
      if (ar.failed()) LOG.debug("change log not read: {}", ar.cause().getMessage());
      release();
      if (again || (ar.succeeded() && ar.result())) poll();
    });
  }

  private void release() {
    long pos = model.position();
    Iterator<Map.Entry<Long, List<Promise<Void>>>> it = waiting.headMap(pos, true).entrySet().iterator();
    while (it.hasNext()) {
      for (Promise<Void> p : it.next().getValue()) p.tryComplete();
      it.remove();
    }
  }

  private void apply(ChangeLog.Entry e) {
    boolean used = applyToModel(e);
    for (ChangeLog.Follower f : followers) used |= f.apply(e);
    if (!used) LOG.warn("skipped change {} of unknown kind {}", e.seq(), e.kind());
  }

  /** Applies an entry to the peer model; false when the model has no use for its kind. */
  private boolean applyToModel(ChangeLog.Entry e) {
    JsonObject d = e.data();
    long seq = e.seq();
    switch (e.kind()) {
      case "enroll" -> model.enroll(seq, new NodeFacts(d.getString("id"), d.getString("team"), d.getString("environment"),
          d.getString("name"), PeerModel.address(d.getString("address")), d.getString("key"), strings(d.getJsonArray("tags")),
          d.getString("relay", ""), new String[0], false));
      case "delete" -> model.delete(seq, d.getString("id"));
      case "retag" -> model.retag(seq, d.getString("id"), strings(d.getJsonArray("tags")));
      case "relay" -> model.live(seq, d.getString("id"), null, null, null, d.getString("relay"));
      case "policy" -> model.policy(seq, d.getString("team"), d.getString("environment"), d.getLong("version"),
          PolicyDocument.parse(d.getJsonObject("policy")));
      case "live" -> {
        for (Object o : d.getJsonArray("nodes")) {
          JsonObject n = (JsonObject) o;
          model.live(seq, n.getString("id"), n.getString("key"), strings(n.getJsonArray("ep")), n.getBoolean("first", false) ? Boolean.TRUE : null,
              null);
        }
      }
      case "online" -> {
        for (Object o : d.getJsonArray("nodes")) {
          JsonObject n = (JsonObject) o;
          model.live(seq, n.getString("id"), null, null, n.getBoolean("online"), null);
        }
      }
      default -> {
        return false;
      }
    }
    return true;
  }

  private static String[] strings(JsonArray a) {
    if (a == null) return new String[0];
    String[] out = new String[a.size()];
    for (int i = 0; i < out.length; i++) out[i] = a.getString(i);
    return out;
  }
}
