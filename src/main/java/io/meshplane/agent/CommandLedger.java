package io.meshplane.agent;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The commands a node has executed, by id, with their results: the last {@value #CAPACITY}. The
 * coordinator re-sends a command until it has recorded its result (after a replica crash, say); a
 * command id found here is never executed again, its stored result is reported instead. The
 * reference agent keeps the ledger in its state dir, so a restart does not re-execute either.
 */
final class CommandLedger {
  static final int CAPACITY = 256;

  /** One executed command and what came of it. */
  record Result(String id, String kind, String status, String detail) {
    JsonObject toJson() {
      return new JsonObject().put("id", id).put("kind", kind).put("status", status).put("detail", detail);
    }

    boolean succeeded() {
      return "succeeded".equals(status);
    }
  }

  private final LinkedHashMap<String, Result> results = new LinkedHashMap<>(16, 0.75f, false) {
    @Override
    protected boolean removeEldestEntry(Map.Entry<String, Result> eldest) {
      return size() > CAPACITY;
    }
  };

  Result get(String id) {
    return results.get(id);
  }

  void put(Result r) {
    results.put(r.id(), r);
  }

  int size() {
    return results.size();
  }

  /** Oldest first, as stored in {@code state.json}. */
  JsonArray toJson() {
    JsonArray a = new JsonArray();
    for (Result r : results.values()) a.add(r.toJson());
    return a;
  }

  /** Reads what {@link #toJson()} wrote; entries that are not well formed are skipped. */
  static CommandLedger fromJson(JsonArray a) {
    CommandLedger l = new CommandLedger();
    if (a == null) return l;
    for (Object o : a) {
      if (o instanceof JsonObject j && j.getValue("id") instanceof String id && j.getValue("status") instanceof String status) {
        l.put(new Result(id, j.getValue("kind") instanceof String k ? k : "", status, j.getValue("detail") instanceof String d ? d : null));
      }
    }
    return l;
  }
}
