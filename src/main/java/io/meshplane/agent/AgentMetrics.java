package io.meshplane.agent;

import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;

/**
 * The reference agent's metrics ({@code mesh_agent_*}), written by hand in the Prometheus text format
 * (0.0.4): every family with HELP and TYPE, counters ending in {@code _total}, base units (seconds,
 * bytes). Counters are thread-safe; the gauges are read from the agent when scraped.
 */
final class AgentMetrics {
  static final String CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";
  private static final Set<String> KINDS = Set.of("rekey", "move_relay", "drain_ingress");

  private final Map<Reply.Outcome, LongAdder> heartbeats = new ConcurrentHashMap<>();
  private final LongAdder heartbeatNanos = new LongAdder();
  private final Map<String, LongAdder> commands = new ConcurrentHashMap<>();
  private final LongAdder failovers = new LongAdder();
  private final LongAdder sentBytes = new LongAdder();
  private final LongAdder receivedBytes = new LongAdder();
  private final LongAdder enrollAttempts = new LongAdder();
  private static final Set<String> MESSAGE_TYPES = Set.of("answer", "ping", "close");
  private final Map<String, LongAdder> watchConnects = new ConcurrentHashMap<>();
  private final Map<String, LongAdder> watchMessages = new ConcurrentHashMap<>();
  private static final String[] VERDICTS = {"trusted", "revoked", "untrusted", "expired", "unreachable"};
  private final Map<String, LongAdder> meshTls = new ConcurrentHashMap<>();

  AgentMetrics() {
    for (Reply.Outcome o : Reply.Outcome.values()) heartbeats.put(o, new LongAdder());
  }

  /** The values read at scrape time. */
  record Gauges(boolean enrolled, boolean ready, int peers, long peersVersion, int aclRules, long aclVersion,
      double lastSuccessAgeSeconds, double intervalSeconds, int consecutiveFailures, double startTimeSeconds, boolean watchOpen,
      Long certificateExpirySeconds) {}

  /** A watch stream attempt's outcome: {@code opened}, {@code refused} (an HTTP status), {@code error} (no answer). */
  void watchConnect(String outcome) {
    watchConnects.computeIfAbsent(outcome, k -> new LongAdder()).increment();
  }

  /** A line of the watch stream, by {@code type} ({@code answer}, {@code ping}, {@code close}; anything else {@code other}). */
  void watchMessage(String type) {
    watchMessages.computeIfAbsent(MESSAGE_TYPES.contains(type) ? type : "other", k -> new LongAdder()).increment();
  }

  void heartbeat(Reply.Outcome outcome, long nanos, int bytesOut, int bytesIn) {
    heartbeats.get(outcome).increment();
    heartbeatNanos.add(nanos);
    sentBytes.add(bytesOut);
    receivedBytes.add(bytesIn);
  }

  void enrollAttempt(int bytesOut, int bytesIn) {
    enrollAttempts.increment();
    sentBytes.add(bytesOut);
    receivedBytes.add(bytesIn);
  }

  void command(String kind, String status) {
    String k = KINDS.contains(kind) ? kind : "unknown";
    commands.computeIfAbsent(k + "\u0000" + status, x -> new LongAdder()).increment();
  }

  /** A verdict on a peer's certificate: {@code side} {@code listener} (a client's, at a handshake) or {@code dialer}. */
  void meshTls(String side, String verdict) {
    meshTls.computeIfAbsent(side + "\u0000" + verdict, k -> new LongAdder()).increment();
  }

  /** Body bytes of the watch stream. */
  void received(int bytes) {
    receivedBytes.add(bytes);
  }

  void failover() {
    failovers.increment();
  }

  String scrape(Gauges g) {
    StringBuilder sb = new StringBuilder(2048);
    family(sb, "mesh_agent_heartbeats_total", "counter", "Heartbeats sent, by outcome (ok, error: no usable answer, unavailable: 503 or 429, rejected: other 4xx).");
    for (Reply.Outcome o : Reply.Outcome.values()) {
      sb.append("mesh_agent_heartbeats_total{outcome=\"").append(o.label).append("\"} ").append(heartbeats.get(o).sum()).append('\n');
    }
    long count = 0;
    for (LongAdder a : heartbeats.values()) count += a.sum();
    family(sb, "mesh_agent_heartbeat_duration_seconds", "summary", "Time from sending a heartbeat to having its answer (or failure).");
    sb.append("mesh_agent_heartbeat_duration_seconds_sum ").append(number(heartbeatNanos.sum() / 1e9)).append('\n');
    sb.append("mesh_agent_heartbeat_duration_seconds_count ").append(count).append('\n');
    family(sb, "mesh_agent_enrollment_attempts_total", "counter", "Enrollment requests sent (a node enrolls once; retries after errors count too).");
    sb.append("mesh_agent_enrollment_attempts_total ").append(enrollAttempts.sum()).append('\n');
    family(sb, "mesh_agent_commands_total", "counter", "Commands executed, by kind and result (a re-sent command is not executed again and not counted).");
    Map<String, Long> sorted = new TreeMap<>();
    commands.forEach((k, v) -> sorted.put(k, v.sum()));
    sorted.forEach((k, v) -> {
      int sep = k.indexOf('\u0000');
      sb.append("mesh_agent_commands_total{kind=\"").append(k, 0, sep).append("\",status=\"").append(k.substring(sep + 1)).append("\"} ")
          .append(v).append('\n');
    });
    family(sb, "mesh_agent_failovers_total", "counter", "Switches to the next coordinator URL after a failure.");
    sb.append("mesh_agent_failovers_total ").append(failovers.sum()).append('\n');
    family(sb, "mesh_agent_sent_bytes_total", "counter", "Request body bytes sent to coordinators.");
    sb.append("mesh_agent_sent_bytes_total ").append(sentBytes.sum()).append('\n');
    family(sb, "mesh_agent_received_bytes_total", "counter", "Answer body bytes received from coordinators.");
    sb.append("mesh_agent_received_bytes_total ").append(receivedBytes.sum()).append('\n');
    family(sb, "mesh_agent_watch_connects_total", "counter", "Watch stream attempts, by outcome (opened, refused: an HTTP status other than 200, error: no answer).");
    for (String o : new String[] {"opened", "refused", "error"}) {
      sb.append("mesh_agent_watch_connects_total{outcome=\"").append(o).append("\"} ").append(sum(watchConnects, o)).append('\n');
    }
    family(sb, "mesh_agent_watch_messages_total", "counter", "Watch stream lines received, by type (answer, ping, close, other).");
    for (String t : new String[] {"answer", "ping", "close", "other"}) {
      sb.append("mesh_agent_watch_messages_total{type=\"").append(t).append("\"} ").append(sum(watchMessages, t)).append('\n');
    }
    family(sb, "mesh_agent_mesh_tls_verdicts_total", "counter",
        "Verdicts on peers' certificates, by side (listener: a client at a handshake; dialer: GET /peers/{id}/tls) and verdict.");
    for (String side : new String[] {"listener", "dialer"}) {
      for (String v : VERDICTS) {
        sb.append("mesh_agent_mesh_tls_verdicts_total{side=\"").append(side).append("\",verdict=\"").append(v).append("\"} ")
            .append(sum(meshTls, side + "\u0000" + v)).append('\n');
      }
    }
    gauge(sb, "mesh_agent_watch_open", "1 while the watch stream is open.", g.watchOpen() ? 1 : 0);
    if (g.certificateExpirySeconds() != null) {
      gauge(sb, "mesh_agent_certificate_expiry_seconds", "Seconds until the node's MeshCA certificate expires (negative once it has); absent before the first.",
          g.certificateExpirySeconds());
    }
    gauge(sb, "mesh_agent_enrolled", "1 when the node holds a credential.", g.enrolled() ? 1 : 0);
    gauge(sb, "mesh_agent_ready", "1 when enrolled and a heartbeat was accepted within 3 intervals (what /readyz says).", g.ready() ? 1 : 0);
    gauge(sb, "mesh_agent_peers", "Peers currently held.", g.peers());
    gauge(sb, "mesh_agent_peers_version", "Version of the peer set held (-1: none yet).", g.peersVersion());
    gauge(sb, "mesh_agent_acl_rules", "Inbound ACL rules currently held.", g.aclRules());
    gauge(sb, "mesh_agent_acl_version", "Version of the ACL rules held (-1: none yet).", g.aclVersion());
    gauge(sb, "mesh_agent_last_success_age_seconds", "Seconds since the last accepted heartbeat (since the agent started, before the first).",
        g.lastSuccessAgeSeconds());
    gauge(sb, "mesh_agent_heartbeat_interval_seconds", "Heartbeat interval in force (answered by the coordinator).", g.intervalSeconds());
    gauge(sb, "mesh_agent_consecutive_failures", "Failed rounds in a row (every coordinator tried); 0 when healthy.", g.consecutiveFailures());
    gauge(sb, "mesh_agent_start_time_seconds", "Start time of the agent, seconds since the Unix epoch.", g.startTimeSeconds());
    return sb.toString();
  }

  private static long sum(Map<String, LongAdder> m, String key) {
    LongAdder a = m.get(key);
    return a == null ? 0 : a.sum();
  }

  private static void family(StringBuilder sb, String name, String type, String help) {
    sb.append("# HELP ").append(name).append(' ').append(help).append('\n');
    sb.append("# TYPE ").append(name).append(' ').append(type).append('\n');
  }

  private static void gauge(StringBuilder sb, String name, String help, double value) {
    family(sb, name, "gauge", help);
    sb.append(name).append(' ').append(number(value)).append('\n');
  }

  private static String number(double v) {
    if (v == Math.rint(v) && Math.abs(v) < 1e15) return Long.toString((long) v);
    return String.format(Locale.ROOT, "%.6f", v);
  }
}
