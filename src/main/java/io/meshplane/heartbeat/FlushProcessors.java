package io.meshplane.heartbeat;

import com.hazelcast.core.ReadOnly;
import com.hazelcast.map.EntryProcessor;
import com.hazelcast.nio.serialization.compact.CompactReader;
import com.hazelcast.nio.serialization.compact.CompactSerializer;
import com.hazelcast.nio.serialization.compact.CompactWriter;
import java.util.HashMap;
import java.util.Map;

/**
 * The write-behind's two entry processors, run on the partition threads of the live map, one call per
 * partition for all of that partition's keys (the write-behind groups keys by partition first:
 * Hazelcast's {@code getAll} and {@code executeOnKeys} send the whole key list to every partition they
 * touch, which filters it, and a per-key {@code replace} costs one invocation per node).
 *
 * <p>Both are stored in the Compact format (they travel to another member when a partition migrates
 * between the key query and the call, and {@link ClearIfUnchanged} travels with its backup operation).
 */
final class FlushProcessors {
  private FlushProcessors() {}

  /** Returns the entry's value when it is dirty (nothing otherwise). Read-only: no write, no backup. */
  static final class ReadDirty implements EntryProcessor<String, LiveNode, LiveNode>, ReadOnly {
    static final ReadDirty INSTANCE = new ReadDirty();

    @Override
    public LiveNode process(Map.Entry<String, LiveNode> entry) {
      LiveNode value = entry.getValue();
      return value != null && value.dirty() ? value : null;
    }

    @Override
    public EntryProcessor<String, LiveNode, LiveNode> getBackupProcessor() {
      return null;
    }
  }

  /**
   * Clears the dirty mark of each entry whose value still equals what was read and written to
   * PostgreSQL (a heartbeat that arrived meanwhile changed the value, so it stays dirty for the next
   * flush). Returns {@code TRUE} for each entry it cleared. The backup copy applies the same check.
   */
  static final class ClearIfUnchanged implements EntryProcessor<String, LiveNode, Boolean> {
    private final String[] keys;
    private final LiveNode[] written;
    private transient Map<String, LiveNode> byKey;

    ClearIfUnchanged(String[] keys, LiveNode[] written) {
      this.keys = keys;
      this.written = written;
    }

    @Override
    public Boolean process(Map.Entry<String, LiveNode> entry) {
      LiveNode current = entry.getValue();
      if (current == null || !current.dirty() || !current.equals(written(entry.getKey()))) return null;
      entry.setValue(current.clean());
      return Boolean.TRUE;
    }

    private LiveNode written(String key) {
      if (byKey == null) {
        Map<String, LiveNode> m = new HashMap<>(keys.length * 2);
        for (int i = 0; i < keys.length; i++) m.put(keys[i], written[i]);
        byKey = m;
      }
      return byKey.get(key);
    }

    @Override
    public EntryProcessor<String, LiveNode, Boolean> getBackupProcessor() {
      return this;
    }
  }

  static final class ReadDirtySerializer implements CompactSerializer<ReadDirty> {
    @Override
    public ReadDirty read(CompactReader in) {
      return ReadDirty.INSTANCE;
    }

    @Override
    public void write(CompactWriter out, ReadDirty p) {
      // no state
    }

    @Override
    public String getTypeName() {
      return "meshplane.ReadDirty";
    }

    @Override
    public Class<ReadDirty> getCompactClass() {
      return ReadDirty.class;
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
