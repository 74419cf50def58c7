package io.meshplane.node;

import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.eventbus.MessageConsumer;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Node changes as events, so that features learn of them without calling into each other: enrolled,
 * deleted, re-tagged, a new reported key, new endpoints, a new reported relay, stale and online again.
 * Whoever makes a change publishes it once; every replica's listeners hear it, through the clustered
 * event bus (one message per change, to all members). Policy and operations subscribe here.
 *
 * <p>Events are notifications, not a log: a replica that is down when one is published misses it, and
 * a listener that keeps derived state must also rebuild it from the source now and then. Changes of one
 * kind found together (a write-behind flush, a staleness scan) travel as one event with several nodes.
 */
public final class NodeEvents {
  private static final Logger LOG = LoggerFactory.getLogger(NodeEvents.class);
  /** The clustered event-bus address every replica listens on. */
  public static final String ADDRESS = "meshplane.nodes.changes";

  /** What changed. */
  public enum Type {
    ENROLLED, DELETED, RETAGGED, KEY_CHANGED, ENDPOINTS_CHANGED, RELAY_CHANGED, STALE, ONLINE
  }

  /** A change of one kind to one or more nodes, found at {@code atMillis}. */
  public record NodeEvent(Type type, List<String> nodeIds, long atMillis) {
    JsonObject toJson() {
      return new JsonObject().put("type", type.name()).put("nodes", new JsonArray(new ArrayList<>(nodeIds))).put("at", atMillis);
    }

    static NodeEvent fromJson(JsonObject j) {
      List<String> ids = new ArrayList<>();
      for (Object o : j.getJsonArray("nodes")) ids.add((String) o);
      return new NodeEvent(Type.valueOf(j.getString("type")), List.copyOf(ids), j.getLong("at"));
    }
  }

  /** Hears every node event of the cluster, on an event loop of this replica: must not block. */
  @FunctionalInterface
  public interface Listener {
    void onNodeEvent(NodeEvent event);
  }

  private final Vertx vertx;
  private final List<Listener> listeners = new CopyOnWriteArrayList<>();
  private final MessageConsumer<JsonObject> consumer;

  public NodeEvents(Vertx vertx) {
    this.vertx = vertx;
    this.consumer = vertx.eventBus().<JsonObject>consumer(ADDRESS, m -> {
      NodeEvent e;
      try {
        e = NodeEvent.fromJson(m.body());
      } catch (RuntimeException ex) {
        // a type this version does not know (a newer replica during a rolling upgrade), or a message
        // that is not an event: skipped, one line, no stack trace
        LOG.warn("skipped a node event this replica cannot read: {}", ex.toString());
        return;
      }
      for (Listener l : listeners) {
        try {
          l.onNodeEvent(e);
        } catch (RuntimeException ex) {
          LOG.warn("a node-event listener failed on {}: {}", e.type(), ex.toString());
        }
      }
    });
  }

  /** Completes when this replica's consumer is registered with the cluster. */
  public Future<Void> ready() {
    return consumer.completion();
  }

  public void subscribe(Listener listener) {
    listeners.add(listener);
  }

  /** Publishes a change to every replica (this one included). Cheap; safe from any thread. */
  public void publish(Type type, List<String> nodeIds) {
    if (nodeIds.isEmpty()) return;
    vertx.eventBus().publish(ADDRESS, new NodeEvent(type, List.copyOf(nodeIds), System.currentTimeMillis()).toJson());
  }

  public void publish(Type type, String nodeId) {
    publish(type, List.of(nodeId));
  }
}
