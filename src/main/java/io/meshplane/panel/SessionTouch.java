package io.meshplane.panel;

import com.hazelcast.core.HazelcastJsonValue;
import com.hazelcast.map.EntryProcessor;
import com.hazelcast.map.ExtendedMapEntry;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * Writes a session again with a new time-to-live, atomically on the member that owns it (and then on
 * its backup), but only while it still exists: a logout or a user's change that removed it meanwhile
 * on another replica is never undone by a request that read it just before.
 */
final class SessionTouch implements EntryProcessor<String, HazelcastJsonValue, Boolean> {
  private static final long serialVersionUID = 1L;
  private final String json;
  private final long ttlMs;

  SessionTouch(String json, long ttlMs) {
    this.json = json;
    this.ttlMs = ttlMs;
  }

  @Override
  public Boolean process(Map.Entry<String, HazelcastJsonValue> entry) {
    if (entry.getValue() == null) return false;
    ((ExtendedMapEntry<String, HazelcastJsonValue>) entry).setValue(new HazelcastJsonValue(json), ttlMs, TimeUnit.MILLISECONDS);
    return true;
  }
}
