package io.meshplane.heartbeat;

import com.hazelcast.map.EntryProcessor;
import com.hazelcast.nio.serialization.compact.CompactReader;
import com.hazelcast.nio.serialization.compact.CompactSerializer;
import com.hazelcast.nio.serialization.compact.CompactWriter;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The write-behind's entry processors, run on the partition threads of the live map, one call per
 * partition for all of that partition's keys (the write-behind groups keys by partition first:
 * Hazelcast's {@code getAll} and {@code executeOnKeys} send the whole key list to every partition they
 * touch, which filters it, and a per-key {@code replace} costs one invocation per node).
 *
 * <p>One pass per flush, not two: {@link Settle} both reads what is dirty now and clears the marks of
 * entries that the previous flush wrote and that have not changed since. A node beating faster than
 * the flush interval has always changed by then, so its entry is only read, never rewritten; a node
 * beating more slowly gets its mark cleared one flush after its row was written.
 *
 * <p>Both are stored in the Compact format (they travel to another member when a partition migrates
 * between the key query and the call, and {@link ClearIfUnchanged} travels as {@link Settle}'s backup).
 */
final class FlushProcessors {
  private FlushProcessors() {}

  /**
   * For each key: if the entry still equals what the previous flush wrote ({@code written}), clears its
   * mark and returns nothing; else returns the entry if it is dirty (to be written now). Its backup is a
   * {@link ClearIfUnchanged} of just the entries it cleared (none cleared: no backup operation at all),
   * so the backup copy applies the same clearing under the same condition.
   *
   * <p>One instance serves one partition's operation (the write-behind calls once per partition); the
   * cleared entries it remembers for its backup are collected on that partition's thread. Should
   * Hazelcast retry the operation on the same instance, entries already cleared are simply listed twice:
   * the backup's clearing is conditional, so applying it again changes nothing.
   */
  static final class Settle implements EntryProcessor<String, LiveNode, LiveNode> {
    private final String[] keys;
    private final LiveNode[] written;
    private transient Map<String, LiveNode> byKey;
    private transient List<String> clearedKeys;
    private transient List<LiveNode> clearedValues;

    /** {@code keys[i]} was written to PostgreSQL as {@code written[i]} by the previous flush (both may be empty). */
    Settle(String[] keys, LiveNode[] written) {
      this.keys = keys;
      this.written = written;
    }

    @Override
    public LiveNode process(Map.Entry<String, LiveNode> entry) {
      LiveNode current = entry.getValue();
      if (current == null || !current.dirty()) return null;
      LiveNode was = written(entry.getKey());
      if (was == null || !current.equals(was)) return current;
      entry.setValue(current.clean());
      if (clearedKeys == null) {
        clearedKeys = new ArrayList<>();
        clearedValues = new ArrayList<>();
      }
      clearedKeys.add(entry.getKey());
      clearedValues.add(was);
      return null;
    }

    private LiveNode written(String key) {
      if (keys.length == 0) return null;
      if (byKey == null) byKey = byKey(keys, written);
      return byKey.get(key);
    }

    @Override
    public EntryProcessor<String, LiveNode, LiveNode> getBackupProcessor() {
      // Hazelcast asks after process() has run on the primary, on the same thread
      return clearedKeys == null ? null
          : new ClearIfUnchanged(clearedKeys.toArray(new String[0]), clearedValues.toArray(new LiveNode[0]));
    }
  }

  private static Map<String, LiveNode> byKey(String[] keys, LiveNode[] values) {
    Map<String, LiveNode> m = new HashMap<>(keys.length * 2);
    for (int i = 0; i < keys.length; i++) m.put(keys[i], values[i]);
    return m;
  }

  /**
   * {@link Settle}'s backup: clears the dirty mark of each entry whose value still equals what was
   * written to PostgreSQL (a heartbeat that arrived meanwhile changed the value, so it stays dirty).
   * Returns nothing (backup results are not read).
   */
  static final class ClearIfUnchanged implements EntryProcessor<String, LiveNode, LiveNode> {
    private final String[] keys;
    private final LiveNode[] written;
    private transient Map<String, LiveNode> byKey;

    ClearIfUnchanged(String[] keys, LiveNode[] written) {
      this.keys = keys;
      this.written = written;
    }

    @Override
    public LiveNode process(Map.Entry<String, LiveNode> entry) {
      LiveNode current = entry.getValue();
      if (current != null && current.dirty() && current.equals(written(entry.getKey()))) entry.setValue(current.clean());
      return null;
    }

    private LiveNode written(String key) {
      if (byKey == null) byKey = byKey(keys, written);
      return byKey.get(key);
    }

    @Override
    public EntryProcessor<String, LiveNode, LiveNode> getBackupProcessor() {
      return this;
    }
  }

  static final class SettleSerializer implements CompactSerializer<Settle> {
    @Override
    public Settle read(CompactReader in) {
      return new Settle(in.readArrayOfString("keys"), in.readArrayOfCompact("written", LiveNode.class));
    }

    @Override
    public void write(CompactWriter out, Settle p) {
      out.writeArrayOfString("keys", p.keys);
      out.writeArrayOfCompact("written", p.written);
    }

    @Override
    public String getTypeName() {
      return "meshplane.Settle";
    }

    @Override
    public Class<Settle> getCompactClass() {
      return Settle.class;
    }
  }

  static final class ClearIfUnchangedSerializer implements CompactSerializer<ClearIfUnchanged> {
    @Override
    public ClearIfUnchanged read(CompactReader in) {
      return new ClearIfUnchanged(in.readArrayOfString("keys"), in.readArrayOfCompact("written", LiveNode.class));
    }

    @Override
    public void write(CompactWriter out, ClearIfUnchanged p) {
      out.writeArrayOfString("keys", p.keys);
      out.writeArrayOfCompact("written", p.written);
    }

    @Override
    public String getTypeName() {
      return "meshplane.ClearIfUnchanged";
    }

    @Override
    public Class<ClearIfUnchanged> getCompactClass() {
      return ClearIfUnchanged.class;
    }
  }
}
