package io.meshplane.policy;

import java.util.LinkedHashSet;
import java.util.Set;
import java.util.BitSet;

/** Nodes with the same source and destination grants: one peer set, one rule set. */
final class PeerClass {
  final BitSet srcBits;
  final BitSet dstBits;
  BitSet peers = new BitSet();
  long peersVersion;
  String rules = "[]";
  long aclVersion;
  int size;
  /** Ring of recent peer changes: seq and node id. */
  long[] logSeq = new long[16];
  String[] logId = new String[16];
  int logStart;
  int logCount;
  /** Changes at or below this seq are not in the log: a node known at or below it needs the full set. */
  long floor;

  PeerClass(BitSet srcBits, BitSet dstBits) {
    this.srcBits = srcBits;
    this.dstBits = dstBits;
  }

  void logged(long seq, String id) {
    peersVersion = Math.max(peersVersion, seq);
    if (logCount == logSeq.length && logSeq.length < PeerModel.CLASS_LOG) {
      long[] s = new long[logSeq.length * 2];
      String[] i = new String[logSeq.length * 2];
      for (int k = 0; k < logCount; k++) {
        s[k] = logSeq[(logStart + k) % logSeq.length];
        i[k] = logId[(logStart + k) % logSeq.length];
      }
      logSeq = s;
      logId = i;
      logStart = 0;
    }
    if (logCount == logSeq.length) {
      floor = Math.max(floor, logSeq[logStart]);
      logStart = (logStart + 1) % logSeq.length;
      logCount--;
    }
    int at = (logStart + logCount) % logSeq.length;
    logSeq[at] = seq;
    logId[at] = id;
    logCount++;
  }

  /** Ids logged after {@code seq}, oldest first, each once. */
  Set<String> since(long seq) {
    Set<String> out = new LinkedHashSet<>();
    for (int k = 0; k < logCount; k++) {
      int at = (logStart + k) % logSeq.length;
      if (logSeq[at] > seq) out.add(logId[at]);
    }
    return out;
  }

  /** Takes over an earlier class's history (same peers after a policy change: the node's version stays). */
  void inherit(PeerClass old) {
    peersVersion = old.peersVersion;
    // copies: an old class split into several new ones with its peers may be inherited twice
    logSeq = old.logSeq.clone();
    logId = old.logId.clone();
    logStart = old.logStart;
    logCount = old.logCount;
    floor = old.floor;
  }
}
