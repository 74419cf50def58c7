package io.meshplane.agent;

/**
 * Spaces the heartbeats that acknowledge a change (routes or a traffic policy applied): one goes at once,
 * or {@link #MIN_GAP_MS} after the last heartbeat started, so a team changing its routes or policy many
 * times a second costs each of its ingress nodes at most one extra heartbeat a second. Event loop only.
 */
final class AckSpacing {
  static final long MIN_GAP_MS = 1000;
  private long lastBeatAtMs;
  /** An acknowledgement came while a heartbeat was on its way: the next one goes as soon as {@link #delayMs} allows. */
  boolean pending;

  void beatStarted() {
    lastBeatAtMs = System.currentTimeMillis();
  }

  /** How long until an acknowledgement may go. */
  long delayMs() {
    return Math.max(0, lastBeatAtMs + MIN_GAP_MS - System.currentTimeMillis());
  }
}
