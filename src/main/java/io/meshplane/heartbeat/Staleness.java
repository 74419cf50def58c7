package io.meshplane.heartbeat;

import java.time.Duration;

/**
 * The status rule of API.md §11: {@code pending} (never heard from), {@code online}, {@code stale} (last
 * heartbeat older than {@code stale_after}). After a cold start of the whole cluster, heartbeats are
 * judged as if they arrived no earlier than the cluster's start: nobody is stale before
 * {@code stale_after} has passed since start, so a coordinator outage does not look like a fleet outage.
 */
final class Staleness {
  private final long staleAfterMs;
  private final long clusterStartMs;

  public Staleness(Duration staleAfter, long clusterStartMs) {
    this.staleAfterMs = staleAfter.toMillis();
    this.clusterStartMs = clusterStartMs;
  }

  public String status(Long heartbeatMs, long nowMs) {
    if (heartbeatMs == null) return "pending";
    return isStale(heartbeatMs, nowMs) ? "stale" : "online";
  }

  public boolean isStale(long heartbeatMs, long nowMs) {
    return nowMs - Math.max(heartbeatMs, clusterStartMs) > staleAfterMs;
  }

  /** Heartbeats before this instant are stale now (ignoring the start grace, which {@link #inGrace} covers). */
  public long cutoff(long nowMs) {
    return nowMs - staleAfterMs;
  }

  /** True while no node may be declared stale: within {@code stale_after} of the cluster's start. */
  public boolean inGrace(long nowMs) {
    return nowMs - clusterStartMs <= staleAfterMs;
  }

  public long staleAfterMs() {
    return staleAfterMs;
  }
}
