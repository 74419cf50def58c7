package io.meshplane.heartbeat;

import io.meshplane.observe.MeshMetrics;
import io.vertx.core.Future;
import io.vertx.pgclient.PgException;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Keeps a row PostgreSQL refuses for its data (a character it cannot store, say) from holding back the
 * others: a batch refused so is split in halves down to the single row at fault, which is quarantined
 * ({@link Quarantine}); quarantined rows are then written one by one, whole while PostgreSQL takes them,
 * else their heartbeat time alone. k bad rows among n cost about 2k·log2(n) extra statements, once.
 * A refusal that is not about the data (PostgreSQL unreachable) fails the batch as it is. Worker thread
 * only (the write-behind verticle's).
 */
final class PoisonIsolation {
  private static final Logger LOG = LoggerFactory.getLogger(PoisonIsolation.class);

  private final RowWriter writer;
  private final Quarantine quarantine;
  private final MeshMetrics metrics;

  PoisonIsolation(RowWriter writer, Quarantine quarantine, MeshMetrics metrics) {
    this.writer = writer;
    this.quarantine = quarantine;
    this.metrics = metrics;
  }

  /**
   * Writes {@code ids} in one statement; when PostgreSQL refuses it for something in the data (not for
   * being unreachable), splits it in halves and writes each, down to the single row at fault, which is
   * quarantined.
   */
  Future<Void> writeIsolating(List<String> ids, Map<String, LiveNode> read, Map<String, LiveNode> before) {
    if (ids.isEmpty()) return Future.succeededFuture();
    return writer.writeBatch(ids, read, before).recover(failure -> {
      if (!isRowData(failure)) return Future.failedFuture(failure);
      if (ids.size() == 1) return quarantine(ids.get(0), read.get(ids.get(0)), failure);
      int mid = ids.size() / 2;
      List<String> left = ids.subList(0, mid);
      List<String> right = ids.subList(mid, ids.size());
      return writeIsolating(left, read, before).compose(v -> writeIsolating(right, read, before));
    });
  }

  /**
   * Quarantined nodes, each in a statement of its own and whole: a row written whole leaves the
   * quarantine; one still refused has its heartbeat time written alone.
   */
  Future<Void> writeAlone(Iterator<String> it, Map<String, LiveNode> read) {
    if (!it.hasNext()) return Future.succeededFuture();
    String id = it.next();
    return writer.writeBatch(List.of(id), read, Map.of())
        .map(v -> {
          if (quarantine.leave(id)) LOG.info("[node: {}] write-behind: the row is written whole again; it left the quarantine", id);
          return (Void) null;
        })
        .recover(failure -> isRowData(failure) ? quarantine(id, read.get(id), failure) : Future.failedFuture(failure))
        .compose(v -> writeAlone(it, read));
  }

  /**
   * Takes a row PostgreSQL refuses out of the batches (logged and counted once per node), and writes
   * its heartbeat time alone, so that the node's liveness still reaches the database. The live map
   * keeps the whole entry; the value counts as written, so its mark is settled like any other.
   */
  private Future<Void> quarantine(String id, LiveNode value, Throwable failure) {
    String reason = reason(failure);
    if (quarantine.enter(id, value, reason)) {
      metrics.writeBehindQuarantined.increment();
      LOG.warn("[node: {}] write-behind: PostgreSQL refuses this node's row ({}); it is quarantined: written on its own, "
          + "with its heartbeat time alone while the whole row is refused; every other row is written", id, reason);
    }
    return writer.writeHeartbeatAlone(id, value).recover(t -> {
      if (!isRowData(t)) return Future.failedFuture(t);
      // not even the heartbeat time can be written: the value counts as handled, so the mark is settled
      writer.written(id, value);
      return Future.succeededFuture();
    });
  }

  /** A refusal caused by the data of some row (SQLSTATE classes 22 data exception, 23 integrity, 54 program limit). */
  static boolean isRowData(Throwable t) {
    for (Throwable c = t; c != null; c = c.getCause() == c ? null : c.getCause()) {
      if (c instanceof PgException pg && pg.getSqlState() != null) {
        String state = pg.getSqlState();
        return state.startsWith("22") || state.startsWith("23") || state.startsWith("54");
      }
    }
    return false;
  }

  private static String reason(Throwable t) {
    for (Throwable c = t; c != null; c = c.getCause() == c ? null : c.getCause()) {
      if (c instanceof PgException pg) return pg.getSqlState() + " " + pg.getErrorMessage();
    }
    return String.valueOf(t.getMessage());
  }
}
