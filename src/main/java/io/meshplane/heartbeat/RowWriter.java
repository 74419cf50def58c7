package io.meshplane.heartbeat;

import com.hazelcast.map.IMap;
import io.vertx.core.Future;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The statements of a write-behind flush: one multi-row UPDATE per batch ({@link LiveRepository#flush}),
 * sending only the fields that changed since this member's previous write of the row, with its
 * follow-ups (rows sent again whole, live entries of deleted nodes dropped). Remembers what it wrote,
 * node id -> the value written, for the next flush to settle the marks of ({@link #takeWritten()}), and
 * whether a statement appended to the change log ({@link #takeAppended()}). Worker thread only.
 */
final class RowWriter {
  private static final Logger LOG = LoggerFactory.getLogger(RowWriter.class);

  private final LiveRepository nodes;
  private final IMap<String, LiveNode> map;
  private final Quarantine quarantine;
  /** Whether a statement of this flush appended to the change log (announced when the flush ends). */
  private boolean appended;
  /** Rows written whose marks are not settled yet: node id -> the value written. */
  private Map<String, LiveNode> written = new HashMap<>();

  RowWriter(LiveRepository nodes, IMap<String, LiveNode> map, Quarantine quarantine) {
    this.nodes = nodes;
    this.map = map;
    this.quarantine = quarantine;
  }

  /** The rows written since the last call (their marks to be settled); starts a new record. */
  Map<String, LiveNode> takeWritten() {
    Map<String, LiveNode> out = written;
    written = new HashMap<>();
    return out;
  }

  /** Rows a flush took but did not reach: kept for the next one (a newer write of the same row wins). */
  void keepUnsettled(Map<String, LiveNode> settling) {
    settling.forEach(written::putIfAbsent);
  }

  int writtenCount() {
    return written.size();
  }

  /** Counts {@code value} as written (its mark is settled like any other). */
  void written(String id, LiveNode value) {
    written.put(id, value);
  }

  /** Whether a statement appended to the change log since the last call. */
  boolean takeAppended() {
    boolean a = appended;
    appended = false;
    return a;
  }

  /** One statement for {@code ids} (plus the follow-ups of {@link #rewriteWhole} and {@link #dropLeftovers}). */
  Future<Void> writeBatch(List<String> ids, Map<String, LiveNode> read, Map<String, LiveNode> before) {
    int n = ids.size();
    return write(ids, read, before)
        .compose(f -> f.rows() == n || before.isEmpty() ? Future.succeededFuture(f) : rewriteWhole(ids, read, before).map(f::plus))
        .compose(f -> f.rows() == n ? Future.succeededFuture(f) : dropLeftovers(ids.toArray(new String[0])).map(f))
        .map(f -> {
          for (String id : ids) written.put(id, read.get(id));
          return null;
        });
  }

  /** The heartbeat time of {@code id} alone (a quarantined row refused whole); counted as written once it committed. */
  Future<Void> writeHeartbeatAlone(String id, LiveNode value) {
    String[] nothing = new String[1];
    return nodes.flush(new String[] {id}, new Long[] {value.heartbeatAt()}, new Long[1], nothing, nothing, nothing, nothing, nothing,
            new Long[1], new Long[1])
        .map(rows -> {
          written.put(id, value);
          return null;
        });
  }

  /**
   * Writes {@code ids} (one statement). A field equal to the one in {@code before} (what this member
   * wrote last flush) is not sent, on the condition that the row still holds that write (its heartbeat
   * time): after a partition moved, another owner may have written the row since. Returns what the
   * statement wrote.
   */
  private Future<LiveRepository.Flushed> write(List<String> ids, Map<String, LiveNode> read, Map<String, LiveNode> before) {
    int n = ids.size();
    Long[] hb = new Long[n];
    Long[] prev = new Long[n];
    String[] ep = new String[n];
    String[] rt = new String[n];
    String[] relay = new String[n];
    String[] key = new String[n];
    String[] tel = new String[n];
    Long[] kp = new Long[n];
    Long[] ka = new Long[n];
    for (int i = 0; i < n; i++) {
      LiveNode l = read.get(ids.get(i));
      LiveNode was = before.get(ids.get(i));
      hb[i] = l.heartbeatAt();
      if (was != null) prev[i] = was.heartbeatAt();
      ep[i] = was != null && Arrays.equals(was.endpoints(), l.endpoints()) ? null : String.join(",", l.endpoints());
      rt[i] = was != null && Arrays.equals(was.routes(), l.routes()) ? null : String.join(",", l.routes());
      relay[i] = was != null && was.relay().equals(l.relay()) ? null : l.relay();
      key[i] = was != null && was.publicKey().equals(l.publicKey()) ? null : l.publicKey();
      tel[i] = was != null && was.telemetry().equals(l.telemetry()) ? null : l.telemetry();
      // always sent (16 bytes): the statement compares them with the row's to stamp acknowledged_at
      kp[i] = l.knownPeers();
      ka[i] = l.knownAcl();
    }
    // a statement's changes count as soon as it commits, whatever the rest of the flush does
    return nodes.flush(ids.toArray(new String[0]), hb, prev, ep, rt, relay, key, tel, kp, ka).onSuccess(f -> appended |= f.logged());
  }

  /**
   * Fewer rows written than sent: a row with fields left out did not hold this member's previous write
   * any more (a partition moved, another owner wrote it since), or a node was deleted, or its row holds
   * this heartbeat already. The rows that had fields left out are sent again whole; those written by
   * the first statement hold this heartbeat now and are not written twice.
   */
  private Future<LiveRepository.Flushed> rewriteWhole(List<String> ids, Map<String, LiveNode> read, Map<String, LiveNode> before) {
    List<String> again = new ArrayList<>();
    for (String id : ids) if (before.containsKey(id)) again.add(id);
    return again.isEmpty() ? Future.succeededFuture(LiveRepository.Flushed.NONE) : write(again, read, Map.of());
  }

  /**
   * Fewer rows written than entries: some nodes were deleted (a heartbeat accepted just before the
   * deletion can re-create a live entry after it was removed). Their entries are dropped here.
   */
  private Future<Void> dropLeftovers(String[] ids) {
    return nodes.missing(ids).map(gone -> {
      for (String id : gone) {
        map.delete(id);
        quarantine.leave(id);
        LOG.info("[node: {}] live entry of a deleted node dropped", id);
      }
      return null;
    });
  }
}
