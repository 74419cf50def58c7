package io.meshplane.watch;

import com.hazelcast.core.HazelcastInstance;
import io.meshplane.changes.ChangeLog;
import io.meshplane.http.Api;
import io.meshplane.module.Module;
import io.meshplane.node.NodePolicy;
import io.meshplane.node.NodeWork;
import io.meshplane.node.OwnerHint;
import io.micrometer.core.instrument.MeterRegistry;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import java.time.Duration;

/**
 * The watch stream's front door (API.md §11, "The watch stream"): {@code GET /v1/nodes/{id}/watch},
 * on which a replica sends a node's answer as soon as it changes for that node. Built after the
 * policy and operations features, so that its follower of the change log sees each entry after they
 * have applied it. Its state: the open streams ({@link WatchHub}, their one owner), the dispatch
 * thread ({@link WatchDispatch}), and a cluster map of claims that bounds a node's streams cluster-wide
 * ({@link StreamClaims}).
 */
public final class WatchModule implements Module {
  /**
   * @param maxPerNode streams one node may hold, cluster-wide
   * @param maxBufferBytes a stream's unread bytes beyond which it is closed as a slow reader
   * @param admitPerSecond new streams this replica accepts per second (beyond: 503 with Retry-After)
   * @param ping how long a stream may carry nothing before a ping line
   * @param drain the window over which a stopping replica ends its streams
   * @param intervalSeconds the heartbeat interval answers carry ({@code interval_s})
   */
  public record Settings(int maxPerNode, int maxBufferBytes, int admitPerSecond, Duration ping, Duration drain, long intervalSeconds) {
    public static final int MAX_PER_NODE = 2;
  }

  private final WatchHub hub;
  private final WatchDispatch dispatch;
  private final Settings settings;

  public WatchModule(Vertx vertx, HazelcastInstance hz, ChangeLog.Feed changes, NodePolicy policy, NodeWork work,
      io.meshplane.node.NodePki pki, io.meshplane.node.NodeIngress ingress, OwnerHint hint, MeterRegistry registry, Settings settings) {
    this.settings = settings;
    WatchHub[] h = new WatchHub[1];
    WatchMetrics metrics = new WatchMetrics(registry, () -> h[0] == null ? 0 : h[0].size());
    WatchDispatch[] d = new WatchDispatch[1];
    this.hub = new WatchHub(vertx, new StreamClaims(hz), metrics, settings, s -> d[0].opened(s));
    h[0] = hub;
    this.dispatch = new WatchDispatch(hub, policy, work, pki, ingress, hint, metrics, settings);
    d[0] = dispatch;
    changes.follow(dispatch);
  }

  @Override
  public String name() {
    return "watch";
  }

  @Override
  public Future<Void> start() {
    dispatch.start();
    return Future.succeededFuture();
  }

  @Override
  public void routes(Api api) {
    if (api.forMachines()) WatchRoutes.mount(api, hub);
  }

  /**
   * A token was denied on some replica (revoked, or retired by a rotation): its streams here end at
   * once, or when the retirement begins. Called on a cluster event thread.
   */
  public void credentialDenied(String tokenId, long notAfterMillis) {
    hub.credentialDenied(tokenId, notAfterMillis);
  }

  /** Open streams on this replica. */
  public int streams() {
    return hub.size();
  }

  /** Ends the streams over the drain window (a rolling restart moves agents a few at a time), then stops the dispatch thread. */
  @Override
  public Future<Void> stop() {
    return hub.drain().eventually(() -> {
      dispatch.stop();
      return Future.succeededFuture();
    });
  }

  @Override
  public Duration stopTimeout() {
    return stopTimeout(settings.drain());
  }

  /** How long the shutdown waits for the drain: the window and a margin for the last close lines. */
  public static Duration stopTimeout(Duration drain) {
    return drain.plusSeconds(5);
  }
}
