package io.meshplane.agent;

import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.util.List;
import java.util.regex.Pattern;

/**
 * One node's side of the coordinator protocol (API.md §8 enrollment, §11 heartbeat), the same code for
 * the reference agent and for every node of the fleet simulator: the enrollment request, the heartbeat
 * body, applying an answer (relay, peers full and delta, acl, ingress, services), executing commands
 * and reporting their results, and where to send next and when (failover and back-off). It does no
 * I/O: the reference agent persists what {@link #takeDirty()} names, the simulator persists nothing.
 *
 * <p>This class holds the node's identity, key, relay, peers and rules, applies answers and keeps what
 * survives a restart; its parts are {@link HeartbeatBody} (the JSON it sends), {@link NodeAssignments}
 * (ingress and services), {@link CommandRunner} (commands and their results) and {@link Pacing} (where
 * and when to send next).
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
  /** After an answer that made the node execute a command, the next heartbeat goes out this soon. */
  static final long REPORT_SOON_MS = 1000;

  static final Pattern LABEL = Pattern.compile("^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$");
  static final Pattern TAG = Pattern.compile("^tag:[a-z0-9][a-z0-9-]{0,62}$");
  private static final CommandLedger.Result[] NO_RESULTS = new CommandLedger.Result[0];

  /** What a session tells its owner as it happens (the reference agent logs and counts; the simulator counts). */
  public interface Events {
    default void executed(CommandLedger.Result result) {}

    /** @param from null when the node held none */
    default void relayChanged(String from, String to, String why) {}

    default void keyRotated(String publicKey) {}

    /** A command that cannot be answered (an id that is not an operation id): never executed, never reported. */
    default void ignoredCommand(String why) {}

    /** An answer's {@code pki} block changed what the node holds (a certificate adopted or refused, a bundle, revocations, a deferral). */
    default void pki(AgentPki.Applied applied) {}
  }

  private static final Events SILENT = new Events() {};

  /** The reference agent's ingress edge as the session reaches it ({@link IngressEdge}); a simulated node has none. */
  interface Edge {
    /** Appends the heartbeat's {@code ingress_routes} report (with its leading comma), or nothing before routes are applied. */
    void writeReport(StringBuilder sb);

    /** {@code drain_ingress} of an assigned ingress: null while the drain is under way (the command comes again), else its result. */
    CommandLedger.Result drain(String opId, String kind, JsonObject command);

    /** An answer's {@code ingress_routes} and {@code ingress} (either may be absent: a stream answer). */
    void apply(Object routes, Object ingress, boolean drainedBySelf);

    /** The node's MeshCA revocation list as applied from an answer's {@code pki} block: a serial (32 hex digits) → revoked. */
    default void revocations(java.util.function.Predicate<String> revokedSerial) {}

    /** The routes version applied, or null. */
    String routesVersion();
  }

  private final String name;
  private final boolean simulated;
  private final NodeKey.Source keys;
  private final Events events;
  private final long startedAtMs;
  private final NodeAssignments assignments = new NodeAssignments();
  private final Pacing pacing = new Pacing();

  private String nodeId;
  private String address;
  private String authorization;
  private NodeKey key;

  /** The relay the node uses and reports; null: none. */
  private String relay;
  /** An answer was applied since this session started (the first one may assign the relay). */
  private boolean answered;

  private PeerBook peers;
  private long aclVersion = -1;
  private JsonArray aclRules;
  private int aclRuleCount;

  /** The node's MeshCA certificate; null when the session asks for none (a simulator without --certificates). */
  private AgentPki pki;

  /** The ingress edge; null: none (no --ingress-listen, a simulated node). */
  private Edge edge;
  /** {@link #takeRoutesToReport()}. */
  private boolean routesToReport;

  /** null before the first command (or a restored ledger). */
  private CommandRunner commands;
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
    return HeartbeatBody.enrollment(name, key.publicKey(), tags);
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

  /**
   * The watch stream's path and query under {@code /v1} (API.md §11 "The watch stream"): the versions the
   * node holds, {@code 0} for none.
   */
  String watchPath() {
    String path = "/nodes/" + nodeId + "/watch?peers=" + Math.max(0, peersVersion()) + "&acl=" + Math.max(0, aclVersion);
    // with MeshCA: the bundle and revocation list held, so the stream carries their changes (a revocation in seconds)
    if (pki != null) path += "&pki_bundle=" + pki.bundleVersionHeld() + "&pki_revocations=" + Math.max(0, pki.revocationsVersion());
    // an ingress node: the routes version it applied (API.md §11), so route changes come on the stream
    String routes = edge == null ? null : edge.routesVersion();
    return routes == null ? path : path + "&ingress=" + routes;
  }

  String authorization() {
    return authorization;
  }

  /**
   * The heartbeat body (API.md §11), written into {@code sb} (cleared first; a simulator reuses one per
   * event loop); see {@link HeartbeatBody#heartbeat}.
   */
  Buffer heartbeatBody(StringBuilder sb, long nowMs) {
    return HeartbeatBody.heartbeat(sb, this, nowMs);
  }

  /**
   * Applies an accepted heartbeat answer: interval, relay (adopted on the first answer when the node holds
   * none; afterwards changed only by {@code move_relay}), peers, acl, ingress, services, then the commands.
   *
   * @return the number of peer entries the answer carried
   */
  int apply(JsonObject a) {
    pacing.answeredInterval(a.getValue("interval_s"));
    if (!answered) {
      answered = true;
      if (relay == null && a.getValue("relay") instanceof String r && LABEL.matcher(r).matches()) {
        relay = r;
        dirty |= DIRTY_STATE;
        events.relayChanged(null, r, "assigned by the coordinator");
      }
    }
    int received = 0;
    // versions never go backwards: a block at or below the version held is what the node holds already, or older
    // (a heartbeat answer computed before a stream answer the node applied meanwhile, a replica behind)
    if (a.getValue("peers") instanceof JsonObject p && p.getValue("version") instanceof Number v && v.longValue() >= 0
        && v.longValue() > peersVersion()) {
      if (p.getValue("items") instanceof JsonArray items) {
        received = book().replace(items, v.longValue());
      } else if (p.getValue("changed") instanceof JsonArray || p.getValue("removed") instanceof JsonArray) {
        received = book().apply(p.getValue("changed") instanceof JsonArray c ? c : null,
            p.getValue("removed") instanceof JsonArray r ? r : null, v.longValue());
      }
      // "unchanged": what the node holds is current (a replica behind may answer a lower version: keep ours)
    }
    if (a.getValue("acl") instanceof JsonObject acl && acl.getValue("version") instanceof Number v && v.longValue() >= 0
        && v.longValue() > aclVersion && acl.getValue("rules") instanceof JsonArray rules) {
      aclVersion = v.longValue();
      aclRuleCount = rules.size();
      aclRules = simulated ? null : rules;
    }
    if (pki != null && a.getValue("pki") instanceof JsonObject p) {
      AgentPki.Applied applied = pki.apply(p, System.currentTimeMillis());
      if (applied.any()) {
        dirty |= DIRTY_STATE;
        events.pki(applied);
      }
      // a hostname certificate the edge serves may be on the list now: it asks for a new one at once
      if (edge != null) edge.revocations(serial -> pki.revoked(serial, null));
    }
    if (assignments.applyIngress(a.getValue("ingress"))) dirty |= DIRTY_STATE;
    assignments.applyServices(a.getValue("services"));
    Object given = a.getValue("commands");
    if (commands == null && given instanceof JsonArray list && !list.isEmpty()) commands = new CommandRunner(new CommandLedger());
    if (commands != null) commands.apply(given, this);
    // heartbeat and stream answers alike: the routes, and whether the ingress listener is to be drained
    if (edge != null) {
      String routesBefore = edge.routesVersion();
      edge.apply(a.getValue("ingress_routes"), a.getValue("ingress"), !assignments.drainedJson().isEmpty());
      if (!java.util.Objects.equals(routesBefore, edge.routesVersion())) routesToReport = true;
    }
    return received;
  }

  private PeerBook book() {
    if (peers == null) peers = new PeerBook(!simulated);
    return peers;
  }

  // ---- what the commands change (CommandRunner) ----

  NodeKey.Source keySource() {
    return keys;
  }

  /** {@code rekey}: the node uses {@code fresh} from now on. */
  void useKey(NodeKey fresh) {
    key = fresh;
    dirty |= DIRTY_KEY;
    events.keyRotated(fresh.publicKey());
  }

  /** {@code move_relay}: the node uses relay {@code to} from now on. */
  void useRelay(String to, String why) {
    String from = relay;
    relay = to;
    dirty |= DIRTY_STATE;
    if (!to.equals(from)) events.relayChanged(from, to, why);
  }

  Events events() {
    return events;
  }

  NodeAssignments assignments() {
    return assignments;
  }

  Pacing pacing() {
    return pacing;
  }

  /** The results the next heartbeat reports: those of the commands in the latest answer. */
  CommandLedger.Result[] reporting() {
    return commands == null ? NO_RESULTS : commands.reporting();
  }

  // ---- where to send next, and when ----

  /** The index of the coordinator URL to use next. */
  int coordinator() {
    return pacing.coordinator();
  }

  int failures() {
    return pacing.failures();
  }

  /** The heartbeat interval in force: the override, else the answered one, else 30 s. */
  long intervalMs(long overrideMs) {
    return pacing.intervalMs(overrideMs);
  }

  /**
   * After an accepted exchange: the wait until the next heartbeat (the interval ± 10 %), or, when the
   * answer made the node execute a command, a short one ({@link #REPORT_SOON_MS} ± 10 %, never more than
   * the interval): the result, and the heartbeat that shows its effect, reach the coordinator within
   * about a second, so an operation completes in about one interval rather than two.
   */
  long afterSuccess(Backoff backoff, long intervalOverrideMs) {
    return pacing.afterSuccess(backoff, intervalOverrideMs);
  }

  /**
   * After a failed exchange: moves to the next coordinator when this one is at fault (no answer, a 5xx),
   * and returns the wait before the next try: 0 while some coordinator of this round has not been
   * tried, else the back-off (at least what {@code Retry-After} asked, within the cap; a lower cap while
   * the node's certificate is due and runs out: {@link AgentPki#retryCapMs}).
   */
  long afterFailure(Reply r, Backoff backoff, int coordinators, long intervalOverrideMs) {
    if (pki == null) return pacing.afterFailure(r, backoff, coordinators, intervalOverrideMs);
    long now = System.currentTimeMillis();
    // a CSR that got no answer was not signed: the next heartbeat carries it again instead of holding it back
    if (r.coordinatorsFault()) pki.unanswered();
    return pacing.afterFailure(r, backoff, coordinators, intervalOverrideMs, pki.retryCapMs(now, pacing.intervalMs(intervalOverrideMs)));
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

  /** What survives a restart besides identity and key: {@code {relay, drained, commands, pki}} (pki holds the certificate's private key). */
  JsonObject persistentState() {
    JsonObject j = new JsonObject().put("relay", relay).put("drained", assignments.drainedJson())
        .put("commands", commands == null ? new JsonArray() : commands.toJson());
    if (pki != null) j.put("pki", pki.toJson());
    return j;
  }

  /** The session asks MeshCA for a certificate (the agent by default; a simulator with --certificates). */
  void usePki(AgentPki p) {
    this.pki = p;
  }

  /** The agent runs an ingress edge ({@code --ingress-listen}): drains wait for it, heartbeats carry its report. */
  /**
   * Whether the edge applied a new routes version since the last call: the caller beats at once (not at
   * the interval) so that the coordinator sees the node acknowledge it ({@code ingress_sync}) within a
   * round trip of the change reaching it.
   */
  boolean takeRoutesToReport() {
    boolean r = routesToReport;
    routesToReport = false;
    return r;
  }

  void useEdge(Edge e) {
    this.edge = e;
  }

  Edge edge() {
    return edge;
  }

  /** The node's certificate state, or null when the session asks for none. */
  AgentPki pki() {
    return pki;
  }

  /** Restores what {@link #persistentState()} wrote. */
  void restore(JsonObject state) {
    if (state == null) return;
    if (state.getValue("relay") instanceof String r && LABEL.matcher(r).matches()) relay = r;
    if (state.getValue("drained") instanceof JsonArray d) assignments.restoreDrained(d);
    if (state.getValue("commands") instanceof JsonArray c && !c.isEmpty()) commands = new CommandRunner(CommandLedger.fromJson(c));
    if (pki != null && state.getValue("pki") instanceof JsonObject p) pki = AgentPki.restore(p, System.currentTimeMillis());
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

  boolean simulated() {
    return simulated;
  }

  long startedAtMs() {
    return startedAtMs;
  }

  /** A peer's mesh address without its prefix length ({@code 100.64.0.7}), or null when the node holds no such peer. */
  String peerAddress(String id) {
    JsonObject e = peers == null ? null : peers.entry(id);
    return e == null ? null : PeerBook.address(e);
  }

  /** The id of the peer at a mesh address, or null: the policy gives this node no peer there (the ingress edge's mesh check). */
  String peerAt(String address) {
    return peers == null ? null : peers.idAt(address);
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
    return pacing.answeredIntervalS();
  }

  /** The ingress as the node reports it: {@code [{name, state}]}; empty before any answer. */
  JsonArray ingress() {
    return assignments.ingress();
  }

  /** The services as the node reports them; empty before any answer. */
  JsonArray services() {
    return assignments.services();
  }

  CommandLedger.Result executed(String commandId) {
    return commands == null ? null : commands.executed(commandId);
  }
}
