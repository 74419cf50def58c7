package io.meshplane.ops;

import io.meshplane.changes.ChangeLog;
import io.vertx.core.Future;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.sqlclient.SqlClient;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * This replica's view of every node's work: bound services, assigned ingress and open operations,
 * held only for nodes that have any. Fed by {@code work} entries of the change log (each carries the
 * node's whole work after a change, so applying is a replacement, never a merge) and by {@code delete}
 * entries; loaded from the feed's snapshot. Heartbeat answers read it from the event loops: one map
 * probe, and for a node with work, bytes encoded once per change.
 */
final class OpsBoard implements ChangeLog.Follower {
  /** The answer's end for a node with no work. */
  static final byte[] NOTHING = ",\"services\":[],\"ingress\":[],\"commands\":[]}".getBytes(StandardCharsets.UTF_8);

  /** An open operation as the board knows it: what to send, what to verify against. */
  record Open(String id, String kind, JsonObject target) {}

  /** A node's work: the answer's end, encoded, and its open operations by id. */
  record Work(byte[] answer, Map<String, Open> open) {}

  private final ConcurrentHashMap<String, Work> work = new ConcurrentHashMap<>();

  /** The node's work, or null when it has none. */
  Work get(String nodeId) {
    return work.get(nodeId);
  }

  int size() {
    return work.size();
  }

  @Override
  public boolean apply(ChangeLog.Entry entry) {
    switch (entry.kind()) {
      case "work" -> put(entry.data());
      case "delete" -> work.remove(entry.data().getString("id"));
      default -> {
        return false;
      }
    }
    return true;
  }

  @Override
  public Future<Void> load(SqlClient snapshot, long seq) {
    return OpsRepository.allWork(snapshot).map(all -> {
      Map<String, Work> fresh = new ConcurrentHashMap<>();
      for (JsonObject w : all) {
        Work parsed = parse(w);
        if (parsed != null) fresh.put(w.getString("node"), parsed);
      }
      work.keySet().retainAll(fresh.keySet());
      work.putAll(fresh);
      return null;
    });
  }

  private void put(JsonObject data) {
    Work w = parse(data);
    if (w == null) work.remove(data.getString("node"));
    else work.put(data.getString("node"), w);
  }

  /** The board's form of a {@code work} entry; null when the node has nothing (no services, ingress or open operation). */
  static Work parse(JsonObject data) {
    JsonArray services = data.getJsonArray("services", new JsonArray());
    JsonArray ingress = data.getJsonArray("ingress", new JsonArray());
    JsonArray open = data.getJsonArray("open", new JsonArray());
    if (services.isEmpty() && ingress.isEmpty() && open.isEmpty()) return null;
    Map<String, Open> byId = new LinkedHashMap<>();
    JsonArray commands = new JsonArray();
    for (Object o : open) {
      JsonObject op = (JsonObject) o;
      JsonObject target = op.getJsonObject("target", new JsonObject());
      Open item = new Open(op.getString("id"), op.getString("kind"), target);
      byId.put(item.id(), item);
      commands.add(command(item));
    }
    String end = ",\"services\":" + services.encode() + ",\"ingress\":" + ingress.encode() + ",\"commands\":" + commands.encode() + "}";
    return new Work(end.getBytes(StandardCharsets.UTF_8), Map.copyOf(byId));
  }

  /** The command an agent receives for an open operation (API.md §11 {@code commands}). */
  static JsonObject command(Open op) {
    JsonObject c = new JsonObject().put("id", op.id()).put("kind", op.kind());
    switch (op.kind()) {
      case "move_relay" -> c.put("relay", op.target().getString("relay"));
      case "drain_ingress" -> {
        c.put("name", op.target().getString("name"));
        if (op.target().getValue("grace_s") instanceof Number g) c.put("grace_s", g.intValue());
      }
      default -> { }
    }
    return c;
  }
}
