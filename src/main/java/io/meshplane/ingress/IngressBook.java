package io.meshplane.ingress;

import io.meshplane.changes.ChangeLog;
import io.meshplane.node.NodeFacts;
import io.meshplane.node.NodeIngress;
import io.vertx.core.Future;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.sqlclient.SqlClient;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * This replica's copy of every team+environment's ingress routes, as a follower of the change log
 * (ARCHITECTURE.md "Ingress routes"), and the heartbeat's {@code ingress_routes} answers from it.
 *
 * <p>It applies {@code ingress} entries (a team+environment's whole route set and version), and the
 * node entries that change what an ingress node is sent: {@code enroll}, {@code retag} and
 * {@code delete} (which nodes carry which tags, where targets live) and {@code work} (a target's bound
 * services). Entries are applied on the feed's one thread; each domain and node is an immutable value
 * replaced whole, so the event loops read them without locks.
 *
 * <p>A node's version is its team+environment's route version {@code v}, as a string; when a node
 * change since that version changed what this node is sent (its own re-tag, a target's deletion or
 * services), {@code "v.s"} with {@code s} the seq of that change: one version names one content on
 * every replica, and versions only grow ({@link #compare}). After a snapshot load, {@code s} is the
 * snapshot's seq, so agents get one full answer from that replica.
 *
 * <p>Cost: an answer to a node that reports its current version is two hash lookups and a comparison;
 * a full answer concatenates the domain's routes for the node's tags, pre-encoded when the domain
 * changed (at most {@value IngressService#MAX_ROUTES} per team+environment), and is kept per node
 * until its version moves; the traffic policy ({@link IngressWaf}) is encoded once per team+environment
 * and appended to each full answer, never copied into a node's cached one. Memory: a small record per
 * node of the mesh (team+environment, tags, address), about 100 bytes, and one policy per
 * team+environment that has one.
 */
final class IngressBook implements ChangeLog.Follower, NodeIngress {
  /** A route as ingress nodes are sent it: its tag and its encoded JSON. */
  record Encoded(String tag, Buffer json) {}

  /**
   * One team+environment: its route version, the seq it changed at, the epoch of node changes (and
   * traffic-policy changes) since, its routes in order, its traffic policy in force (null: none).
   */
  record Domain(String key, long version, long seq, long epoch, List<JsonObject> routes, List<Encoded> encoded, Set<String> tags,
      Set<String> targets, IngressWaf waf) {
    static Domain empty(String key) {
      return new Domain(key, 0, 0, 0, List.of(), List.of(), Set.of(), Set.of(), null);
    }

    Domain withWaf(IngressWaf w, long atSeq) {
      return new Domain(key, version, seq, atSeq, routes, encoded, tags, targets, w);
    }
  }

  /** A node as this book needs it. {@code epoch}: the seq of its last re-tag that changed the routes it serves. */
  record Node(String domain, String name, String[] tags, String address, long epoch) {}

  /** A node's last full answer, by version. */
  private record Answer(String version, Buffer json) {}

  /** The traffic policies in force, read from a snapshot ({@code WafPolicyModule.inForce}: this feature does not own the table). */
  private final java.util.function.Function<SqlClient, Future<List<JsonObject>>> wafInForce;

  IngressBook(java.util.function.Function<SqlClient, Future<List<JsonObject>>> wafInForce) {
    this.wafInForce = wafInForce;
  }

  // replaced whole by a snapshot load (built aside, then swapped in), so a heartbeat never sees a half-loaded book
  private volatile Map<String, Domain> domains = new ConcurrentHashMap<>();
  private volatile Map<String, Node> nodes = new ConcurrentHashMap<>();
  private volatile Map<String, String[]> services = new ConcurrentHashMap<>();
  private volatile Map<String, Answer> answers = new ConcurrentHashMap<>();
  // for the gauges (IngressGauges): when each domain's routes, or a node's own routes by a re-tag, last changed (epoch ms)
  private volatile Map<String, Long> changedAt = new ConcurrentHashMap<>();
  private volatile Map<String, Long> retaggedAt = new ConcurrentHashMap<>();
  /** Moves whenever the set of nodes that serve routes may have changed (the gauges list them again then). */
  private volatile long generation;

  // ---- the follower (the feed's thread) ----

  @Override
  public Future<Void> load(SqlClient snapshot, long seq) {
    return NodeFacts.all(snapshot).compose(all -> IngressRepository.allServices(snapshot).compose(svc -> wafInForce.apply(snapshot).compose(wafs ->
        IngressRepository.allVersions(snapshot).compose(versions -> IngressRepository.allRoutes(snapshot).map(routes -> {
          Map<String, Node> loadedNodes = new ConcurrentHashMap<>();
          Map<String, String[]> loadedServices = new ConcurrentHashMap<>();
          Map<String, Domain> loadedDomains = new ConcurrentHashMap<>();
          for (NodeFacts n : all) {
            loadedNodes.put(n.id(), new Node(key(n.team(), n.environment()), n.name(), n.tags(), dotted(n.address()), 0));
          }
          for (Object[] s : svc) loadedServices.put((String) s[0], (String[]) s[1]);
          Map<String, List<JsonObject>> byDomain = new HashMap<>();
          for (IngressRepository.Route r : routes) byDomain.computeIfAbsent(key(r.team(), r.environment()), k -> new ArrayList<>()).add(r.entry());
          Map<String, IngressWaf> byDomainWaf = new HashMap<>();
          for (JsonObject w : wafs) byDomainWaf.merge(key(w.getString("team"), w.getString("environment")), IngressWaf.of(null, w), (a, b) -> IngressWaf.of(a, w));
          for (Object[] v : versions) {
            String k = key((String) v[0], (String) v[1]);
            // the snapshot's seq as the epoch: versions handed out before it may have named other content
            loadedDomains.put(k, build(loadedNodes, loadedServices, k, (Long) v[2], 0, seq, byDomain.getOrDefault(k, List.of()), byDomainWaf.get(k)));
          }
          byDomainWaf.forEach((k, w) -> loadedDomains.computeIfAbsent(k, x -> Domain.empty(k).withWaf(w, seq)));
          nodes = loadedNodes;
          services = loadedServices;
          domains = loadedDomains;
          answers = new ConcurrentHashMap<>();
          long now = System.currentTimeMillis();
          Map<String, Long> loadedAt = new ConcurrentHashMap<>();
          for (String k : loadedDomains.keySet()) loadedAt.put(k, now);
          changedAt = loadedAt;
          retaggedAt = new ConcurrentHashMap<>();
          generation++;
          return null;
        })))));
  }

  @Override
  public boolean apply(ChangeLog.Entry e) {
    JsonObject d = e.data();
    switch (e.kind()) {
      case "ingress" -> {
        String k = key(d.getString("team"), d.getString("environment"));
        List<JsonObject> routes = new ArrayList<>();
        for (Object o : d.getJsonArray("routes", new JsonArray())) routes.add((JsonObject) o);
        Domain was = domains.get(k);
        domains.put(k, build(k, d.getLong("version"), e.seq(), 0, routes, was == null ? null : was.waf()));
        changedAt.put(k, at(e));
        generation++;
      }
      case "waf" -> {
        // a new traffic policy version: the domain's content changed, under a new epoch (every node's version moves)
        String k = key(d.getString("team"), d.getString("environment"));
        Domain was = domains.getOrDefault(k, Domain.empty(k));
        domains.put(k, was.withWaf(IngressWaf.of(was.waf(), d), e.seq()));
        changedAt.put(k, at(e));
      }
      case "enroll" -> {
        nodes.put(d.getString("id"), new Node(key(d.getString("team"), d.getString("environment")), d.getString("name"),
            strings(d.getJsonArray("tags")), d.getString("address"), 0));
        generation++;
      }
      case "retag" -> {
        Node n = nodes.get(d.getString("id"));
        if (n == null) return true;
        String[] tags = strings(d.getJsonArray("tags"));
        Domain dom = domains.get(n.domain());
        boolean concerns = dom != null && (any(dom.tags(), n.tags()) || any(dom.tags(), tags));
        nodes.put(d.getString("id"), new Node(n.domain(), n.name(), tags, n.address(), concerns ? e.seq() : n.epoch()));
        if (concerns) retaggedAt.put(d.getString("id"), at(e));
        generation++;
      }
      case "delete" -> {
        String id = d.getString("id");
        Node n = nodes.remove(id);
        services.remove(id);
        answers.remove(id);
        retaggedAt.remove(id);
        generation++;
        if (n != null) touchTarget(n.domain(), id, e);
      }
      case "work" -> {
        String id = d.getString("node");
        JsonArray svc = d.getJsonArray("services", new JsonArray());
        String[] now = strings(svc);
        String[] was = services.get(id);
        if (now.length == 0) {
          services.remove(id);
        } else {
          services.put(id, now);
        }
        Node n = nodes.get(id);
        if (n != null && !java.util.Arrays.equals(was == null ? new String[0] : was, now)) touchTarget(n.domain(), id, e);
      }
      default -> {
        return false;
      }
    }
    return true;
  }

  /** A node of {@code domain} changed where it is a target: its routes are encoded again, under a new epoch. */
  private void touchTarget(String domain, String id, ChangeLog.Entry e) {
    Domain dom = domains.get(domain);
    if (dom == null || !dom.targets().contains(id)) return;
    domains.put(domain, build(domain, dom.version(), dom.seq(), e.seq(), dom.routes(), dom.waf()));
    changedAt.put(domain, at(e));
  }

  private static long at(ChangeLog.Entry e) {
    return e.atMillis() > 0 ? e.atMillis() : System.currentTimeMillis();
  }

  private Domain build(String key, long version, long seq, long epoch, List<JsonObject> routes, IngressWaf waf) {
    return build(nodes, services, key, version, seq, epoch, routes, waf);
  }

  private static Domain build(Map<String, Node> nodes, Map<String, String[]> services, String key, long version, long seq, long epoch,
      List<JsonObject> routes, IngressWaf waf) {
    List<Encoded> encoded = new ArrayList<>(routes.size());
    Set<String> tags = new HashSet<>();
    Set<String> targets = new HashSet<>();
    for (JsonObject r : routes) {
      String tag = r.getString("ingress_tag");
      tags.add(tag);
      JsonObject t = r.getJsonObject("target");
      targets.add(t.getString("node"));
      encoded.add(new Encoded(tag, encode(nodes, services, r, t)));
    }
    return new Domain(key, version, seq, epoch, List.copyOf(routes), List.copyOf(encoded), Set.copyOf(tags), Set.copyOf(targets), waf);
  }

  /**
   * The route as an ingress node is sent it, its target resolved to an address and port. A target that
   * is gone or unbound is sent as {@code target.state} ({@code target_missing}, {@code service_unbound})
   * without address and port: the rule keeps its place, so its requests get the edge's 502 instead of
   * falling through to a later rule of the same hostname (API.md §19).
   */
  private static Buffer encode(Map<String, Node> nodes, Map<String, String[]> services, JsonObject r, JsonObject target) {
    Node n = nodes.get(target.getString("node"));
    int port = n == null ? 0 : port(services.get(target.getString("node")), target.getString("service"));
    JsonObject t = new JsonObject().put("node", target.getString("node")).put("service", target.getString("service"));
    if (n == null) {
      t.put("state", "target_missing");
    } else if (port <= 0) {
      t.put("state", "service_unbound");
    } else {
      t.put("address", n.address()).put("port", port).put("proto", "tcp");
    }
    return new JsonObject().put("id", r.getString("id")).put("hostname", r.getString("hostname")).put("path_prefix", r.getString("path_prefix"))
        .put("exposure", r.getString("exposure")).put("tls", r.getString("tls")).put("target", t).toBuffer();
  }

  /** The port of service {@code name} among bound {@code name:port}s; 0 when not bound. */
  static int port(String[] bound, String name) {
    if (bound == null) return 0;
    for (String s : bound) {
      int colon = s.lastIndexOf(':');
      if (colon > 0 && s.substring(0, colon).equals(name)) return Integer.parseInt(s.substring(colon + 1));
    }
    return 0;
  }

  // ---- the answers (event loops) ----

  @Override
  public void answer(String nodeId, String reported, Buffer out) {
    write(nodeId, reported, out);
  }

  /** Appends the node's block for {@code reported} ("" for none); returns the version it sent in full, or {@code reported}. */
  private String write(String nodeId, String reported, Buffer out) {
    Node n = nodes.get(nodeId);
    if (n == null) return reported;
    Domain d = domains.get(n.domain());
    boolean serves = d != null && any(d.tags(), n.tags());
    boolean reports = reported != null && !reported.isEmpty();
    if (!serves && !reports) return reported;
    String current = version(d, n);
    if (reports && compare(reported, current) >= 0) {
      // the agent holds this version, or a later one from a replica further ahead: never sent back
      out.appendString(",\"ingress_routes\":{\"version\":\"").appendString(reported).appendString("\",\"unchanged\":true}");
      return reported;
    }
    Answer a = answers.get(nodeId);
    if (a == null || !a.version().equals(current)) {
      a = new Answer(current, full(d, n, current));
      answers.put(nodeId, a);
    }
    // the team+environment's traffic policy in force (one buffer per team+environment, never copied into a node's cached answer)
    out.appendString(",\"ingress_routes\":").appendBuffer(a.json()).appendString(",\"waf\":");
    if (d == null || d.waf() == null) out.appendString("null}");
    else out.appendBuffer(d.waf().json()).appendString("}");
    return current;
  }

  /** Whether {@link #answer} for {@code held} would send the routes in full (see {@link NodeIngress#due}). */
  @Override
  public boolean due(String nodeId, String held) {
    Node n = nodes.get(nodeId);
    if (n == null) return false;
    Domain d = domains.get(n.domain());
    boolean holds = held != null && !held.isEmpty();
    if (!holds && (d == null || !any(d.tags(), n.tags()))) return false;
    return !holds || compare(held, version(d, n)) < 0;
  }

  /** {@link #answer} for a watch stream; the version the stream carries after it. */
  @Override
  public String streamPart(String nodeId, String held, Buffer out) {
    return write(nodeId, held, out);
  }

  /** The node's routes of {@code version}, the block left open for its {@code waf} (appended by {@link #write}). */
  private static Buffer full(Domain d, Node n, String version) {
    Buffer b = Buffer.buffer(128).appendString("{\"version\":\"").appendString(version).appendString("\",\"routes\":[");
    boolean first = true;
    if (d != null) {
      for (Encoded e : d.encoded()) {
        if (!has(n.tags(), e.tag())) continue;
        if (!first) b.appendString(",");
        b.appendBuffer(e.json());
        first = false;
      }
    }
    return b.appendString("]");
  }

  @Override
  public JsonObject sync(String nodeId, String acknowledged) {
    String ack = acknowledged == null || acknowledged.isEmpty() ? null : acknowledged;
    Node n = nodes.get(nodeId);
    Domain d = n == null ? null : domains.get(n.domain());
    boolean serves = d != null && any(d.tags(), n.tags());
    String current = n == null ? null : version(d, n);
    String state = !serves && ack == null ? "none" : ack != null && current != null && compare(ack, current) >= 0 ? "current" : "behind";
    // a node that serves no route and holds none has no version to be current with: none, null, like NodeIngress.NONE
    return new JsonObject().put("state", state).put("acknowledged", ack).put("current", state.equals("none") ? null : current);
  }

  /**
   * {@code waf_sync}: {@code state} none (the node serves no route, or its team+environment has no
   * traffic policy, and it reported none), current or behind; the policy version it acknowledged
   * enforcing (null: none) and the current one, with the enforced and shadow versions of the current.
   */
  JsonObject wafVersions(String nodeId, String acknowledged) {
    String ack = acknowledged == null || acknowledged.isEmpty() ? null : acknowledged;
    Node n = nodes.get(nodeId);
    Domain d = n == null ? null : domains.get(n.domain());
    IngressWaf w = d == null || !any(d.tags(), n.tags()) ? null : d.waf();
    long ackd = -1;
    try {
      if (ack != null) ackd = Long.parseLong(ack);
    } catch (NumberFormatException e) {
      ackd = -1;
    }
    String state = w == null && ack == null ? "none" : w == null || ackd >= w.version() ? "current" : "behind";
    return new JsonObject().put("state", state).put("acknowledged", ack).put("current", w == null ? null : Long.toString(w.version()))
        .put("enforce", w == null || w.enforced() == 0 ? null : w.enforced()).put("shadow", w == null || w.shadowed() == 0 ? null : w.shadowed());
  }

  // ---- for the gauges (off the event loops) ----

  /** The ids of the nodes that serve routes now (a route of their team+environment names one of their tags). O(nodes of the mesh). */
  List<String> servingNodes() {
    Map<String, Domain> ds = domains;
    List<String> out = new ArrayList<>();
    nodes.forEach((id, n) -> {
      Domain d = ds.get(n.domain());
      if (d != null && any(d.tags(), n.tags())) out.add(id);
    });
    return out;
  }

  /** At most {@code max} nodes of team+environment that serve its routes. O(nodes of the mesh). */
  List<String> servingNodes(String team, String env, int max) {
    String k = key(team, env);
    Domain d = domains.get(k);
    List<String> out = new ArrayList<>();
    if (d == null || d.tags().isEmpty()) return out;
    for (Map.Entry<String, Node> e : nodes.entrySet()) {
      if (out.size() == max) break;
      if (e.getValue().domain().equals(k) && any(d.tags(), e.getValue().tags())) out.add(e.getKey());
    }
    return out;
  }

  /** See {@link #generation}. */
  long generation() {
    return generation;
  }

  /**
   * Since when (epoch ms, this replica's view) the node's current version is current: the last change of
   * its team+environment's routes or targets, or of its own tags; after a snapshot load, the load.
   */
  long currentSince(String nodeId) {
    Node n = nodes.get(nodeId);
    long t = n == null ? 0 : changedAt.getOrDefault(n.domain(), 0L);
    Long r = retaggedAt.get(nodeId);
    if (r != null) t = Math.max(t, r);
    return t == 0 ? System.currentTimeMillis() : t;
  }

  /** The routes of a team+environment this replica holds, and their version (the service's read-your-writes check). */
  Domain domain(String team, String env) {
    Domain d = domains.get(key(team, env));
    return d == null ? Domain.empty(key(team, env)) : d;
  }

  /** A node's version: {@code v}, or {@code v.s} after a node change that concerns it (see the class comment). */
  static String version(Domain d, Node n) {
    if (d == null) return "0";
    long e = Math.max(d.epoch(), n.epoch() > d.seq() ? n.epoch() : 0);
    return e == 0 ? Long.toString(d.version()) : d.version() + "." + e;
  }

  /** Orders versions {@code v} and {@code v.s} (a missing s is 0); an unreadable one is older than any. */
  static int compare(String a, String b) {
    long[] x = parse(a);
    long[] y = parse(b);
    if (x == null) return y == null ? 0 : -1;
    if (y == null) return 1;
    int c = Long.compare(x[0], y[0]);
    return c != 0 ? c : Long.compare(x[1], y[1]);
  }

  private static long[] parse(String v) {
    if (v == null) return null;
    int dot = v.indexOf('.');
    try {
      if (dot < 0) return new long[] {Long.parseLong(v), 0};
      return new long[] {Long.parseLong(v.substring(0, dot)), Long.parseLong(v.substring(dot + 1))};
    } catch (NumberFormatException e) {
      return null;
    }
  }

  private static boolean any(Set<String> tags, String[] of) {
    if (tags.isEmpty()) return false;
    for (String t : of) if (tags.contains(t)) return true;
    return false;
  }

  private static boolean has(String[] tags, String tag) {
    for (String t : tags) if (t.equals(tag)) return true;
    return false;
  }

  static String key(String team, String env) {
    return team + "/" + env;
  }

  private static String dotted(int a) {
    return ((a >>> 24) & 255) + "." + ((a >>> 16) & 255) + "." + ((a >>> 8) & 255) + "." + (a & 255);
  }

  private static String[] strings(JsonArray a) {
    if (a == null) return new String[0];
    String[] out = new String[a.size()];
    for (int i = 0; i < a.size(); i++) out[i] = a.getString(i);
    return out;
  }
}
