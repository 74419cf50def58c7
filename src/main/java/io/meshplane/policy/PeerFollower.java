package io.meshplane.policy;

import io.meshplane.changes.ChangeLog;
import io.meshplane.node.NodeFacts;
import io.vertx.core.Future;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.sqlclient.SqlClient;
import java.util.HashMap;
import java.util.Map;
import java.util.function.Consumer;

/**
 * The peer model as a follower of the change log: each entry the model has a use for is applied to
 * it (on the feed's thread, in seq order), and a snapshot loads it whole: every node's facts and every
 * current policy, read in the feed's REPEATABLE READ transaction.
 */
final class PeerFollower implements ChangeLog.Follower {
  private final PeerModel model;
  /** Told of every deleted node (the drift watch forgets it). */
  private final Consumer<String> deleted;

  PeerFollower(PeerModel model, Consumer<String> deleted) {
    this.model = model;
    this.deleted = deleted;
  }

  @Override
  public Future<Void> load(SqlClient snapshot, long seq) {
    return NodeFacts.all(snapshot).compose(nodes -> PolicyRepository.allCurrent(snapshot).map(policies -> {
      Map<String, PolicyDocument> docs = new HashMap<>();
      Map<String, Long> versions = new HashMap<>();
      for (PolicyRepository.Stored s : policies) {
        docs.put(s.team() + "/" + s.environment(), PolicyDocument.parse(s.policy()));
        versions.put(s.team() + "/" + s.environment(), s.version());
      }
      model.load(seq, nodes, docs, versions);
      return null;
    }));
  }

  @Override
  public boolean apply(ChangeLog.Entry e) {
    JsonObject d = e.data();
    long seq = e.seq();
    switch (e.kind()) {
      case "enroll" -> model.enroll(seq, new NodeFacts(d.getString("id"), d.getString("team"), d.getString("environment"),
          d.getString("name"), PeerModel.address(d.getString("address")), d.getString("key"), strings(d.getJsonArray("tags")),
          d.getString("relay", ""), new String[0], false));
      case "delete" -> {
        model.delete(seq, d.getString("id"));
        deleted.accept(d.getString("id"));
      }
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
