package io.meshplane.agent;

import io.meshplane.common.Ids;
import io.meshplane.common.Ports;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * One node's side of the coordinator protocol (API.md §8 enrollment, §11 heartbeat), the same code for
 * the reference agent and for every node of the fleet simulator: the enrollment request, the heartbeat
 * body, applying an answer (relay, peers full and delta, acl, ingress, services), executing commands
 * and reporting their results, and where to send next and when (failover and back-off). It does no
 * I/O: the reference agent persists what {@link #takeDirty()} names, the simulator persists nothing.
 *
 * <p>Small on purpose (a simulator holds 100,000): collections are created when first needed. Not
 * thread-safe: one event loop owns a session.
 */
final class AgentSession {
  static final String AGENT_VERSION = "0.1.0";
  static final long DEFAULT_INTERVAL_MS = 30_000;
  /** The coordinator accepts at most 64 {@code command_results}; more commands wait for a later answer. */
  static final int MAX_COMMANDS = 64;
  static final int MAX_INGRESS = 16;
  static final int MAX_SERVICES = 64;
  /** {@link #takeDirty()}: the key pair changed. */
  static final int DIRTY_KEY = 1;
  /** {@link #takeDirty()}: relay, drained ingress or the command ledger changed. */
  static final int DIRTY_STATE = 2;

  static final Pattern LABEL = Pattern.compile("^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$");
  static final Pattern TAG = Pattern.compile("^tag:[a-z0-9][a-z0-9-]{0,62}$");
  private static final Pattern SERVICE = Pattern.compile("^[a-z0-9][a-z0-9-]{0,62}:([0-9]{1,5})$");
  private static final String[] NO_STRINGS = new String[0];
  private static final boolean[] NO_FLAGS = new boolean[0];
  private static final CommandLedger.Result[] NO_RESULTS = new CommandLedger.Result[0];

  /** What a session tells its owner as it happens (the reference agent logs and counts; the simulator counts). */
  public interface Events {
    default void executed(CommandLedger.Result result) {}

    /** @param from null when the node held none */
    default void relayChanged(String from, String to, String why) {}

    default void keyRotated(String publicKey) {}

    /** A command that cannot be answered (an id that is not an operation id): never executed, never reported. */
    default void ignoredCommand(String why) {}
  }

  private static final Events SILENT = new Events() {};

  private final String name;
  private final boolean simulated;
  private final NodeKey.Source keys;
  private final Events events;
  private final long startedAtMs;

  private String nodeId;
  private String address;
  private String authorization;
  private NodeKey key;

  /** The relay the node uses and reports; null: none. */
  private String relay;
  /** An answer was applied since this session started (the first one may assign the relay). */
  private boolean answered;
  private int intervalS;
  /** A command was executed on the last answer: its result goes out soon, not an interval later. */
  private boolean resultsWaiting;
  static final long REPORT_SOON_MS = 1000;

  private String[] ingressNames;
  private boolean[] ingressDrainedByCoordinator;
  /** Ingress the node drained itself (drain_ingress), by name; null: none. */
  private Set<String> drained;
  /** The services bound to the node, as answered; null before any answer. */
  private String[] services;

  private PeerBook peers;
  private long aclVersion = -1;
  private JsonArray aclRules;
  private int aclRuleCount;

  private CommandLedger ledger;
  /** The results the next heartbeat reports: those of the commands in the latest answer. */
  private CommandLedger.Result[] reporting = NO_RESULTS;

  private int url;
  private int tried;
  private int failures;
  private int dirty;

  /**
   * @param simulated a simulated node keeps peer ids but not entries, no acl rules, and says so in its telemetry
   */
  public AgentSession(String name, NodeKey key, NodeKey.Source keys, boolean simulated, Events events, long startedAtMs) {
    this.name = name;
    this.key = key;
    this.keys = keys;
    this.simulated = simulated;
    this.events = events == null ? SILENT : events;
    this.startedAtMs = startedAtMs;
  }

  // ---- enrollment ----

  /** The body of {@code POST /v1/nodes}: {@code {name, public_key, tags}}. */
  Buffer enrollmentBody(List<String> tags) {
    StringBuilder sb = new StringBuilder(128).append('{');
    JsonText.key(sb, "name");
    JsonText.string(sb, name).append(',');
    JsonText.key(sb, "public_key");
    JsonText.string(sb, key.publicKey()).append(',');
    JsonText.key(sb, "tags").append('[');
    for (int i = 0; i < tags.size(); i++) {
      if (i > 0) sb.append(',');
      JsonText.string(sb, tags.get(i));
    }
    return Buffer.buffer(sb.append("]}").toString());
  }

  /**
   * Takes the identity from an enrollment answer ({@code {node:{id, address}, credential:{token}}}).
   *
   * @return false when the answer lacks any of them (nothing is taken then)
   */
  boolean enrolled(JsonObject answer) {
    if (answer == null || !(answer.getValue("node") instanceof JsonObject node)
        || !(answer.getValue("credential") instanceof JsonObject credential)) {
      return false;
    }
    if (!(node.getValue("id") instanceof String id) || !(credential.getValue("token") instanceof String token) || token.isEmpty()) {
      return false;
    }
    identify(id, node.getValue("address") instanceof String a ? a : "", token);
    return true;
  }

  /** Sets the identity (from an enrollment, or from the state dir after a restart). */
  void identify(String id, String nodeAddress, String credential) {
    this.nodeId = id;
    this.address = nodeAddress;
    this.authorization = "Bearer " + credential;
  }

  boolean isEnrolled() {
    return nodeId != null;
  }

  // ---- the heartbeat ----

  /** The heartbeat path under {@code /v1}. */
  String heartbeatPath() {
    return "/nodes/" + nodeId + "/heartbeat";
  }

  String authorization() {
    return authorization;
  }

  /**
   * The heartbeat body (API.md §11), written into {@code sb} (cleared first; a simulator reuses one per
   * event loop). Members the node does not hold are left out: no relay before one is assigned, no
   * ingress or services before the first answer, {@code known} only with the versions held.
   */
  Buffer heartbeatBody(StringBuilder sb, long nowMs) {
    sb.setLength(0);
    sb.append('{');
    JsonText.key(sb, "public_key");
    JsonText.string(sb, key.publicKey());
    if (relay != null) {
      JsonText.key(sb.append(','), "relay");
      JsonText.string(sb, relay);
    }
    if (services != null) {
      JsonText.key(sb.append(','), "services").append('[');
      for (int i = 0; i < services.length; i++) {
        if (i > 0) sb.append(',');
        JsonText.string(sb, services[i]);
      }
      sb.append(']');
    }
    if (ingressNames != null) {
      JsonText.key(sb.append(','), "ingress").append('[');
      for (int i = 0; i < ingressNames.length; i++) {
        if (i > 0) sb.append(',');
        JsonText.key(sb.append('{'), "name");
        JsonText.string(sb, ingressNames[i]).append(',');
        JsonText.key(sb, "state").append('"').append(ingressState(i)).append("\"}");
      }
      sb.append(']');
    }
    JsonText.key(sb.append(','), "telemetry").append('{');
    JsonText.key(sb, "agent_version").append('"').append(AGENT_VERSION).append("\",");
    JsonText.key(sb, "uptime_s").append(Math.max(0, (nowMs - startedAtMs) / 1000)).append(',');
    JsonText.key(sb, "peers").append(peerCount());
    if (simulated) JsonText.key(sb.append(','), "simulated").append("true");
    sb.append('}');
    if (reporting.length > 0) {
      JsonText.key(sb.append(','), "command_results").append('[');
      for (int i = 0; i < reporting.length; i++) {
        CommandLedger.Result r = reporting[i];
        if (i > 0) sb.append(',');
        JsonText.key(sb.append('{'), "id");
        JsonText.string(sb, r.id()).append(',');
        JsonText.key(sb, "status");
        JsonText.string(sb, r.status());
        if (r.detail() != null) {
          JsonText.key(sb.append(','), "detail");
          JsonText.string(sb, r.detail());
        }
        sb.append('}');
      }
      sb.append(']');
    }
    if (peers != null || aclVersion >= 0) {
      JsonText.key(sb.append(','), "known").append('{');
      if (peers != null) JsonText.key(sb, "peers").append(peers.version());
      if (aclVersion >= 0) {
        if (peers != null) sb.append(',');
        JsonText.key(sb, "acl").append(aclVersion);
      }
      sb.append('}');
    }
    return Buffer.buffer(sb.append('}').toString());
  }

  private String ingressState(int i) {
    return ingressDrainedByCoordinator[i] || (drained != null && drained.contains(ingressNames[i])) ? "drained" : "active";
  }

  /**
   * Applies an accepted heartbeat answer: interval, relay (adopted on the first answer when the node holds
   * none; afterwards changed only by {@code move_relay}), peers, acl, ingress, services, then the commands.
   *
   * @return the number of peer entries the answer carried
   */
  int apply(JsonObject a) {
    if (a.getValue("interval_s") instanceof Number n && n.longValue() >= 1 && n.longValue() <= 86_400) intervalS = n.intValue();
    if (!answered) {
      answered = true;
      if (relay == null && a.getValue("relay") instanceof String r && LABEL.matcher(r).matches()) {
        relay = r;
        dirty |= DIRTY_STATE;
        events.relayChanged(null, r, "assigned by the coordinator");
      }
    }
    int received = 0;
    if (a.getValue("peers") instanceof JsonObject p && p.getValue("version") instanceof Number v && v.longValue() >= 0) {
      if (p.getValue("items") instanceof JsonArray items) {
        received = book().replace(items, v.longValue());
      } else if (p.getValue("changed") instanceof JsonArray || p.getValue("removed") instanceof JsonArray) {
        received = book().apply(p.getValue("changed") instanceof JsonArray c ? c : null,
            p.getValue("removed") instanceof JsonArray r ? r : null, v.longValue());
      }
      // "unchanged": what the node holds is current (a replica behind may answer a lower version: keep ours)
    }
    if (a.getValue("acl") instanceof JsonObject acl && acl.getValue("version") instanceof Number v && v.longValue() >= 0
        && acl.getValue("rules") instanceof JsonArray rules) {
      aclVersion = v.longValue();
      aclRuleCount = rules.size();
      aclRules = simulated ? null : rules;
    }
    applyIngress(a.getValue("ingress"));
    applyServices(a.getValue("services"));
    applyCommands(a.getValue("commands"));
    return received;
  }

  private PeerBook book() {
    if (peers == null) peers = new PeerBook(!simulated);
    return peers;
  }

  private void applyIngress(Object value) {
    if (!(value instanceof JsonArray given) || given.isEmpty()) {
      ingressNames = NO_STRINGS;
      ingressDrainedByCoordinator = NO_FLAGS;
      if (drained != null) {
        drained = null;
        dirty |= DIRTY_STATE;
      }
      return;
    }
    List<String> names = new ArrayList<>(0);
    List<Boolean> coordinatorDrained = new ArrayList<>(0);
    for (Object o : given) {
      if (names.size() == MAX_INGRESS) break;
      if (o instanceof JsonObject in && in.getValue("name") instanceof String n && LABEL.matcher(n).matches() && !names.contains(n)) {
        names.add(n);
        coordinatorDrained.add("drained".equals(in.getValue("state")));
      }
    }
    ingressNames = names.isEmpty() ? NO_STRINGS : names.toArray(NO_STRINGS);
    ingressDrainedByCoordinator = new boolean[names.size()];
    for (int i = 0; i < names.size(); i++) ingressDrainedByCoordinator[i] = coordinatorDrained.get(i);
    // an ingress no longer assigned is forgotten: assigned again later, it starts active
    if (drained != null && drained.removeIf(n -> !names.contains(n))) dirty |= DIRTY_STATE;
  }

  private void applyServices(Object value) {
    if (!(value instanceof JsonArray list) || list.isEmpty()) {
      services = NO_STRINGS;
      return;
    }
    List<String> out = new ArrayList<>(list.size());
    for (Object o : list) {
      if (out.size() == MAX_SERVICES) break;
      if (o instanceof String s && service(s) && !out.contains(s)) out.add(s);
    }
    services = out.toArray(NO_STRINGS);
  }

  /** {@code ssh:22}, read as the coordinator reads it: the port without a leading zero ({@link Ports}). */
  private static boolean service(String s) {
    var m = SERVICE.matcher(s);
    return m.matches() && Ports.parse(m.group(1)) > 0;
  }

  private void applyCommands(Object value) {
    if (!(value instanceof JsonArray list) || list.isEmpty()) {
      reporting = NO_RESULTS;
      return;
    }
    List<CommandLedger.Result> report = new ArrayList<>(Math.min(list.size(), MAX_COMMANDS));
    for (Object o : list) {
      if (report.size() == MAX_COMMANDS) break;
      if (!(o instanceof JsonObject c)) continue;
      String id = c.getValue("id") instanceof String s ? s : null;
      if (!Ids.looksLike("op", id)) {
        events.ignoredCommand("a command without an operation id: " + c.encode());
        continue;
      }
      if (ledger == null) ledger = new CommandLedger();
      CommandLedger.Result r = ledger.get(id);
      if (r == null) {
        r = execute(id, c);
        ledger.put(r);
        dirty |= DIRTY_STATE;
        events.executed(r);
        resultsWaiting = true;
      }
      if (!report.contains(r)) report.add(r);
    }
    reporting = report.toArray(NO_RESULTS);
  }

  private CommandLedger.Result execute(String id, JsonObject c) {
    String kind = c.getValue("kind") instanceof String k ? k : "";
    switch (kind) {
      case "rekey" -> {
        NodeKey fresh;
        try {
          fresh = keys.generate();
        } catch (RuntimeException e) {
          return new CommandLedger.Result(id, kind, "failed", "no new key pair: " + e.getMessage());
        }
        key = fresh;
        dirty |= DIRTY_KEY;
        events.keyRotated(fresh.publicKey());
        return new CommandLedger.Result(id, kind, "succeeded", "new public key " + fresh.publicKey());
      }
      case "move_relay" -> {
        String to = c.getValue("relay") instanceof String r ? r : null;
        if (to == null || !LABEL.matcher(to).matches()) {
          return new CommandLedger.Result(id, kind, "failed", "move_relay needs a relay name");
        }
        String from = relay;
        relay = to;
        dirty |= DIRTY_STATE;
        if (!to.equals(from)) events.relayChanged(from, to, "move_relay " + id);
        return new CommandLedger.Result(id, kind, "succeeded", "relay " + to + " in use");
      }
      case "drain_ingress" -> {
        String ingress = c.getValue("name") instanceof String n ? n : null;
        if (ingress == null || ingressNames == null || !List.of(ingressNames).contains(ingress)) {
          return new CommandLedger.Result(id, kind, "failed", "no ingress named " + (ingress == null ? "(none given)" : ingress) + " on this node");
        }
        if (drained == null) drained = new HashSet<>(4);
        drained.add(ingress);
        dirty |= DIRTY_STATE;
        return new CommandLedger.Result(id, kind, "succeeded", "ingress " + ingress + " drained");
      }
      default -> {
        return new CommandLedger.Result(id, kind.length() > 64 ? kind.substring(0, 64) : kind, "failed", "unknown command kind");
      }
    }
  }

  // ---- where to send next, and when ----

  /** The index of the coordinator URL to use next. */
  int coordinator() {
    return url;
  }

  int failures() {
    return failures;
  }

  /** The heartbeat interval in force: the override, else the answered one, else 30 s. */
  long intervalMs(long overrideMs) {
    if (overrideMs > 0) return overrideMs;
    return intervalS > 0 ? intervalS * 1000L : DEFAULT_INTERVAL_MS;
  }

  /**
   * After an accepted exchange: the wait until the next heartbeat (the interval ± 10 %), or, when the
   * answer made the node execute a command, a short one ({@link #REPORT_SOON_MS} ± 10 %, never more than
   * the interval): the result, and the heartbeat that shows its effect, reach the coordinator within
   * about a second, so an operation completes in about one interval rather than two.
   */
  long afterSuccess(Backoff backoff, long intervalOverrideMs) {
    failures = 0;
    tried = 0;
    long interval = intervalMs(intervalOverrideMs);
    if (resultsWaiting) {
      resultsWaiting = false;
      return backoff.intervalMs(Math.min(REPORT_SOON_MS, interval));
    }
    return backoff.intervalMs(interval);
  }

  /**
   * After a failed exchange: moves to the next coordinator when this one is at fault (no answer, a 5xx),
   * and returns the wait before the next try: 0 while some coordinator of this round has not been
   * tried, else the back-off (at least what {@code Retry-After} asked, within the cap).
   */
  long afterFailure(Reply r, Backoff backoff, int coordinators, long intervalOverrideMs) {
    if (r.coordinatorsFault() && coordinators > 1) {
      url = (url + 1) % coordinators;
      if (++tried < coordinators) return 0;
    }
    tried = 0;
    failures++;
    long interval = intervalMs(intervalOverrideMs);
    long wait = backoff.delayMs(failures, interval);
    if (r.retryAfterMs() > wait) wait = Math.min(r.retryAfterMs(), Backoff.capMs(interval));
    return wait;
  }

  // ---- persistence (reference agent) ----

  /** Which parts changed since the last call ({@link #DIRTY_KEY}, {@link #DIRTY_STATE}); clears them. */
  int takeDirty() {
    int d = dirty;
    dirty = 0;
    return d;
  }

  /** Marks parts as still to be saved (a save failed). */
  void markDirty(int parts) {
    dirty |= parts;
  }

  /** What survives a restart besides identity and key: {@code {relay, drained, commands}}. */
  JsonObject persistentState() {
    JsonArray d = new JsonArray();
    if (drained != null) drained.stream().sorted().forEach(d::add);
    return new JsonObject().put("relay", relay).put("drained", d).put("commands", ledger == null ? new JsonArray() : ledger.toJson());
  }

  /** Restores what {@link #persistentState()} wrote. */
  void restore(JsonObject state) {
    if (state == null) return;
    if (state.getValue("relay") instanceof String r && LABEL.matcher(r).matches()) relay = r;
    if (state.getValue("drained") instanceof JsonArray d && !d.isEmpty()) {
      drained = new HashSet<>();
      for (Object o : d) if (o instanceof String s) drained.add(s);
    }
    if (state.getValue("commands") instanceof JsonArray c && !c.isEmpty()) ledger = CommandLedger.fromJson(c);
  }

  // ---- what the node holds (for /info, metrics, tests) ----

  public String name() {
    return name;
  }

  public String nodeId() {
    return nodeId;
  }

  public String address() {
    return address;
  }

  NodeKey key() {
    return key;
  }

  public String publicKey() {
    return key.publicKey();
  }

  public String relay() {
    return relay;
  }

  public int peerCount() {
    return peers == null ? 0 : peers.size();
  }

  /** -1 before any peers block. */
  public long peersVersion() {
    return peers == null ? -1 : peers.version();
  }

  /** -1 before any acl block. */
  public long aclVersion() {
    return aclVersion;
  }

  public int aclRuleCount() {
    return aclRuleCount;
  }

  /** The inbound rules (reference agent only; null in a simulated node or before any). */
  JsonArray aclRules() {
    return aclRules;
  }

  PeerBook peers() {
    return peers;
  }

  /** The answered interval in seconds, 0 before any answer. */
  int answeredIntervalS() {
    return intervalS;
  }

  /** The ingress as the node reports it: {@code [{name, state}]}; empty before any answer. */
  JsonArray ingress() {
    JsonArray a = new JsonArray();
    if (ingressNames != null) {
      for (int i = 0; i < ingressNames.length; i++) a.add(new JsonObject().put("name", ingressNames[i]).put("state", ingressState(i)));
    }
    return a;
  }

  /** The services as the node reports them; empty before any answer. */
  JsonArray services() {
    return services == null ? new JsonArray() : new JsonArray(List.of(services));
  }

  CommandLedger.Result executed(String commandId) {
    return ledger == null ? null : ledger.get(commandId);
  }
}
