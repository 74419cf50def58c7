package io.meshplane.load;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.BufferedWriter;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.LongAdder;

/**
 * The virtual agents of a run: read from the feeder file that {@link PrepareAgents} writes, each with
 * its own credential, and each holding what the reference agent holds between heartbeats (its peers
 * and ACL versions and its peer ids), so that every heartbeat body carries the {@code known} versions
 * of the previous answer and an idle agent is answered {@code unchanged}, as in production.
 *
 * <p>The body is the one {@code io.meshplane.agent.AgentSession#heartbeatBody} writes (public_key,
 * relay, services, ingress, telemetry, known), plus {@code endpoints}: one fixed {@code ip:port} per
 * agent (198.18.0.0/15, the benchmarking range), since a real node reports where it can be reached
 * (docs/API.md §11). It never changes during a run, so heartbeats alone do not move any peer's version.
 *
 * <p>Thread-safe: an agent's state is guarded by the agent itself (with a circular feeder the same
 * agent is never in flight twice unless the rate exceeds agents / latency).
 */
final class Fleet {
  static final String AGENT_VERSION = "0.1.0";
  static final String HEADER = "node_id,agent_token,name,public_key,relay,tag,endpoint,peers_version,acl_version";
  private static final ObjectMapper JSON = new ObjectMapper();

  /** How the heartbeat answers came (printed at the end of a run). */
  static final class Counters {
    final LongAdder answers = new LongAdder();
    final LongAdder peersFull = new LongAdder();
    final LongAdder peersDelta = new LongAdder();
    final LongAdder peersUnchanged = new LongAdder();
    final LongAdder aclRules = new LongAdder();
    final LongAdder aclUnchanged = new LongAdder();
    final LongAdder commands = new LongAdder();

    String summary() {
      return String.format("heartbeat answers: %d; peers full %d / delta %d / unchanged %d; acl rules %d / unchanged %d;"
              + " answers with commands %d",
          answers.sum(), peersFull.sum(), peersDelta.sum(), peersUnchanged.sum(), aclRules.sum(), aclUnchanged.sum(),
          commands.sum());
    }

    boolean allUnchangedSince(long answersBefore, long unchangedPeersBefore, long unchangedAclBefore) {
      long n = answers.sum() - answersBefore;
      return n > 0 && peersUnchanged.sum() - unchangedPeersBefore == n && aclUnchanged.sum() - unchangedAclBefore == n;
    }
  }

  /** One virtual agent. */
  static final class Agent {
    final String id;
    final String token;
    final String name;
    final String publicKey;
    final String relay;
    final String tag;
    final String endpoint;
    private long peersVersion;
    private long aclVersion;
    /** The peer ids held; null before a full answer. */
    private Set<String> peers;

    Agent(String id, String token, String name, String publicKey, String relay, String tag, String endpoint,
        long peersVersion, long aclVersion) {
      this.id = id;
      this.token = token;
      this.name = name;
      this.publicKey = publicKey;
      this.relay = relay;
      this.tag = tag;
      this.endpoint = endpoint;
      this.peersVersion = peersVersion;
      this.aclVersion = aclVersion;
    }

    synchronized long peersVersion() {
      return peersVersion;
    }

    synchronized long aclVersion() {
      return aclVersion;
    }

    /** The heartbeat body, with the versions this agent holds. */
    synchronized String body(long uptimeS) {
      StringBuilder sb = new StringBuilder(256).append('{');
      sb.append("\"public_key\":").append(quote(publicKey));
      if (!relay.isEmpty()) sb.append(",\"relay\":").append(quote(relay));
      sb.append(",\"endpoints\":[").append(quote(endpoint)).append(']');
      sb.append(",\"services\":[],\"ingress\":[]");
      sb.append(",\"telemetry\":{\"agent_version\":\"").append(AGENT_VERSION).append("\",\"uptime_s\":").append(uptimeS)
          .append(",\"peers\":").append(peers == null ? 0 : peers.size()).append(",\"simulated\":true}");
      if (peersVersion > 0 || aclVersion > 0) {
        sb.append(",\"known\":{\"peers\":").append(peersVersion).append(",\"acl\":").append(aclVersion).append('}');
      }
      return sb.append('}').toString();
    }

    /**
     * Applies a 200 heartbeat answer as the reference agent does (docs/API.md §11 "Applying an answer").
     *
     * @return "ok", or what is wrong with the answer
     */
    String apply(String body, Counters counters) {
      JsonNode a;
      try {
        a = JSON.readTree(body);
      } catch (IOException e) {
        return "the answer is not JSON: " + e.getMessage();
      }
      if (a == null || !a.path("server_time").isTextual()) return "the answer has no server_time";
      JsonNode p = a.path("peers");
      JsonNode acl = a.path("acl");
      if (!p.path("version").canConvertToLong() || p.path("version").asLong() < 0) return "the answer has no peers.version";
      if (!acl.path("version").canConvertToLong() || acl.path("version").asLong() < 0) return "the answer has no acl.version";
      synchronized (this) {
        long v = p.get("version").asLong();
        if (p.path("items").isArray()) {
          Set<String> fresh = new HashSet<>();
          for (JsonNode item : p.get("items")) fresh.add(item.path("id").asText());
          peers = fresh;
          peersVersion = v;
          counters.peersFull.increment();
        } else if (p.path("changed").isArray() || p.path("removed").isArray()) {
          if (peers == null) peers = new HashSet<>();
          for (JsonNode item : p.path("changed")) peers.add(item.path("id").asText());
          for (JsonNode id : p.path("removed")) peers.remove(id.asText());
          peersVersion = v;
          counters.peersDelta.increment();
        } else if (p.path("unchanged").asBoolean(false)) {
          counters.peersUnchanged.increment(); // keep ours: a replica behind may answer a lower number
        } else {
          return "peers is neither items, a delta nor unchanged";
        }
        if (acl.path("rules").isArray()) {
          aclVersion = acl.get("version").asLong();
          counters.aclRules.increment();
        } else if (acl.path("unchanged").asBoolean(false)) {
          counters.aclUnchanged.increment();
        } else {
          return "acl is neither rules nor unchanged";
        }
      }
      if (a.path("commands").isArray() && a.get("commands").size() > 0) counters.commands.increment();
      counters.answers.increment();
      return "ok";
    }

    String csvLine() {
      return String.join(",", id, token, name, publicKey, relay, tag, endpoint, Long.toString(peersVersion()),
          Long.toString(aclVersion()));
    }
  }

  final List<Agent> agents;
  final Map<String, Agent> byId;
  final Counters counters = new Counters();
  private final long startedMs = System.currentTimeMillis();

  Fleet(List<Agent> agents) {
    this.agents = List.copyOf(agents);
    Map<String, Agent> m = new HashMap<>();
    for (Agent a : agents) m.put(a.id, a);
    this.byId = Collections.unmodifiableMap(m);
  }

  /** Reads the feeder file; stops naming the file when it is missing or empty. */
  static Fleet load(Path file) {
    List<String> lines;
    try {
      lines = Files.readAllLines(file, StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new IllegalStateException("cannot read the feeder " + file + " (" + e + "): prepare it first with "
          + "'mvn -B -q test-compile exec:java -Durls=... -Dtoken=... -Dagents=N' (README.md, section Gatling)");
    }
    List<Agent> out = new ArrayList<>();
    for (int i = 0; i < lines.size(); i++) {
      String line = lines.get(i).trim();
      if (line.isEmpty() || line.startsWith("node_id,")) continue;
      String[] f = line.split(",", -1);
      if (f.length != 9) throw new IllegalStateException(file + " line " + (i + 1) + ": expected 9 columns: " + HEADER);
      out.add(new Agent(f[0], f[1], f[2], f[3], f[4], f[5], f[6], Long.parseLong(f[7]), Long.parseLong(f[8])));
    }
    if (out.isEmpty()) throw new IllegalStateException(file + " holds no agents");
    return new Fleet(out);
  }

  /** Writes the feeder file (mode 0600: it holds credentials), through a temp file and a rename. */
  static void write(Path file, List<Agent> agents) throws IOException {
    Path dir = file.toAbsolutePath().getParent();
    Files.createDirectories(dir);
    Path tmp = Files.createTempFile(dir, "agents", ".tmp");
    try {
      Files.setPosixFilePermissions(tmp, PosixFilePermissions.fromString("rw-------"));
    } catch (UnsupportedOperationException ignored) {
      // not a POSIX file system
    }
    try (BufferedWriter w = Files.newBufferedWriter(tmp, StandardCharsets.UTF_8)) {
      w.write(HEADER);
      w.newLine();
      for (Agent a : agents) {
        w.write(a.csvLine());
        w.newLine();
      }
    }
    Files.move(tmp, file, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
  }

  /** The records of a Gatling feeder: node_id, agent_token, name. */
  List<Map<String, Object>> records() {
    List<Map<String, Object>> out = new ArrayList<>(agents.size());
    for (Agent a : agents) {
      Map<String, Object> r = new LinkedHashMap<>();
      r.put("node_id", a.id);
      r.put("agent_token", a.token);
      r.put("name", a.name);
      out.add(r);
    }
    return out;
  }

  String body(String nodeId) {
    return agent(nodeId).body(Math.max(0, (System.currentTimeMillis() - startedMs) / 1000));
  }

  String apply(String nodeId, String answer) {
    return agent(nodeId).apply(answer, counters);
  }

  Agent agent(String nodeId) {
    Agent a = byId.get(nodeId);
    if (a == null) throw new IllegalStateException("no agent " + nodeId + " in the feeder");
    return a;
  }

  /** How many tag groups (tag:g<n>, one per agent) the agents form: the largest n + 1. */
  int groups() {
    int max = -1;
    for (Agent a : agents) {
      if (a.tag.startsWith("tag:g")) {
        try {
          max = Math.max(max, Integer.parseInt(a.tag.substring(5)));
        } catch (NumberFormatException ignored) {
          // another tag
        }
      }
    }
    return max + 1;
  }

  static String quote(String s) {
    StringBuilder sb = new StringBuilder(s.length() + 2).append('"');
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      switch (c) {
        case '"' -> sb.append("\\\"");
        case '\\' -> sb.append("\\\\");
        default -> {
          if (c < 0x20) sb.append(String.format("\\u%04x", (int) c));
          else sb.append(c);
        }
      }
    }
    return sb.append('"').toString();
  }

  /** 198.18.0.0/15 (RFC 2544, benchmarking): one address per agent index, port 41641. */
  static String endpoint(int index) {
    int n = 1 + index % ((1 << 17) - 2);
    return "198." + (18 + (n >> 16)) + "." + ((n >> 8) & 0xff) + "." + (n & 0xff) + ":41641";
  }
}
