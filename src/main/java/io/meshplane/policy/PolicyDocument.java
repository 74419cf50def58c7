package io.meshplane.policy;

import io.meshplane.common.Fields;
import io.meshplane.common.Ports;
import io.meshplane.node.NodeFormats;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.util.ArrayList;
import java.util.List;

/**
 * A team+environment's ACL policy as validated values (API.md §10): grants of {@code src -> dst} on
 * ports, and the policy's own tests. Parsing names every problem by JSON pointer
 * ({@code /grants/2/ports/0}) and rejects the whole document; nothing here knows nodes.
 *
 * <p>Limits, so that one policy cannot make the engine's work unbounded: {@value #MAX_GRANTS} grants,
 * {@value #MAX_SELECTORS} selectors per side, {@value #MAX_PORTS} port entries per grant,
 * {@value #MAX_TESTS} tests of at most {@value #MAX_PROBES} probes each (and the 64 KiB body limit).
 */
record PolicyDocument(List<Grant> grants, List<PolicyTest> tests) {
  public static final int MAX_GRANTS = 500;
  public static final int MAX_SELECTORS = 64;
  public static final int MAX_PORTS = 32;
  public static final int MAX_TESTS = 100;
  public static final int MAX_PROBES = 64;

  public static final PolicyDocument EMPTY = new PolicyDocument(List.of(), List.of());

  /** Who a selector names: every node, nodes with a tag, the node with a name, or an address prefix. */
  public sealed interface Selector {
    String text();

    /** Does this selector name the node? */
    boolean matches(String name, String[] tags, int address);
  }

  public record Any() implements Selector {
    @Override public String text() {
      return "*";
    }

    @Override public boolean matches(String name, String[] tags, int address) {
      return true;
    }
  }

  public record Tag(String text) implements Selector {
    @Override public boolean matches(String name, String[] tags, int address) {
      for (String t : tags) if (t.equals(text)) return true;
      return false;
    }
  }

  public record Host(String text) implements Selector {
    @Override public boolean matches(String name, String[] tags, int address) {
      return text.equals(name);
    }
  }

  /** An IPv4 prefix: names the nodes whose mesh address lies inside, and as a source, the prefix itself. */
  public record Prefix(String text, int base, int bits) implements Selector {
    @Override public boolean matches(String name, String[] tags, int address) {
      return bits == 0 || ((address ^ base) >>> (32 - bits)) == 0;
    }
  }

  /** {@code proto} is tcp, udp, icmp or * ; a port range only for tcp and udp. */
  public record PortRange(String text, String proto, int from, int to) {
    boolean covers(String p, int port) {
      if (proto.equals("*")) return true;
      if (!proto.equals(p)) return false;
      return proto.equals("icmp") || (port >= from && port <= to);
    }
  }

  /** One grant; {@code index} is its place in {@code grants} (0-based, as in its JSON pointer). */
  public record Grant(int index, List<Selector> src, List<Selector> dst, List<PortRange> ports) {
    public boolean inSrc(String name, String[] tags, int address) {
      for (Selector s : src) if (s.matches(name, tags, address)) return true;
      return false;
    }

    public boolean inDst(String name, String[] tags, int address) {
      for (Selector s : dst) if (s.matches(name, tags, address)) return true;
      return false;
    }

    public boolean allows(String proto, int port) {
      for (PortRange p : ports) if (p.covers(proto, port)) return true;
      return false;
    }

    /** The grant as text, the way {@code acl_matches} shows it: {@code grant 2: tag:web -> tag:db tcp/5432}. */
    public String text() {
      return "grant " + index + ": " + join(src) + " -> " + join(dst) + " " + String.join(", ", ports.stream().map(PortRange::text).toList());
    }

    /** An {@code acl_matches} entry: the grant's text and the node's side of it. */
    public String match(boolean source, boolean destination) {
      return text() + (source && destination ? " (source, destination)" : source ? " (source)" : " (destination)");
    }

    private static String join(List<Selector> s) {
      return String.join(", ", s.stream().map(Selector::text).toList());
    }
  }

  /** {@code target} is a node name or a tag; {@code proto} tcp, udp or icmp (port 0 for icmp). */
  public record Probe(String text, String target, String proto, int port) {}

  /** A test: from every node {@code src} names, each of {@code accept} must be allowed and each of {@code deny} refused. */
  public record PolicyTest(int index, String src, List<Probe> accept, List<Probe> deny) {}

  /** Parses and validates a policy body ({@code {grants, tests?}}); throws a 400 naming every bad field by JSON pointer. */
  public static PolicyDocument parse(JsonObject body) {
    Fields f = new Fields();
    List<Grant> grants = new ArrayList<>();
    Object g = body.getValue("grants");
    if (!(g instanceof JsonArray ga)) {
      f.error("/grants", g == null ? "is required" : "must be an array");
    } else if (ga.size() > MAX_GRANTS) {
      f.error("/grants", "must have at most " + MAX_GRANTS + " grants");
    } else {
      for (int i = 0; i < ga.size(); i++) {
        String at = "/grants/" + i;
        if (!(ga.getValue(i) instanceof JsonObject go)) {
          f.error(at, "must be an object {src, dst, ports}");
          continue;
        }
        List<Selector> src = selectors(f, go, at + "/src");
        List<Selector> dst = selectors(f, go, at + "/dst");
        List<PortRange> ports = ports(f, go, at + "/ports");
        if (src != null && dst != null && ports != null) grants.add(new Grant(i, src, dst, ports));
      }
    }
    List<PolicyTest> tests = new ArrayList<>();
    Object t = body.getValue("tests");
    if (t != null) {
      if (!(t instanceof JsonArray ta)) {
        f.error("/tests", "must be an array");
      } else if (ta.size() > MAX_TESTS) {
        f.error("/tests", "must have at most " + MAX_TESTS + " tests");
      } else {
        for (int i = 0; i < ta.size(); i++) {
          String at = "/tests/" + i;
          if (!(ta.getValue(i) instanceof JsonObject to)) {
            f.error(at, "must be an object {src, accept?, deny?}");
            continue;
          }
          Object src = to.getValue("src");
          if (!(src instanceof String s) || !(NodeFormats.name(s) || NodeFormats.tag(s))) {
            f.error(at + "/src", "must be a node name or tag:<slug>");
          }
          List<Probe> accept = probes(f, to, at + "/accept", "accept");
          List<Probe> deny = probes(f, to, at + "/deny", "deny");
          if (accept.isEmpty() && deny.isEmpty() && f.ok()) f.error(at, "must have at least one accept or deny entry");
          if (f.ok()) tests.add(new PolicyTest(i, (String) src, accept, deny));
        }
      }
    }
    f.check();
    return new PolicyDocument(List.copyOf(grants), List.copyOf(tests));
  }

  /** The document as stored and shown: the validated values written back in their canonical text. */
  public JsonObject toJson() {
    JsonArray gs = new JsonArray();
    for (Grant g : grants) {
      gs.add(new JsonObject()
          .put("src", new JsonArray(g.src().stream().map(Selector::text).toList()))
          .put("dst", new JsonArray(g.dst().stream().map(Selector::text).toList()))
          .put("ports", new JsonArray(g.ports().stream().map(PortRange::text).toList())));
    }
    JsonArray ts = new JsonArray();
    for (PolicyTest t : tests) {
      JsonObject o = new JsonObject().put("src", t.src());
      o.put("accept", new JsonArray(t.accept().stream().map(Probe::text).toList()));
      o.put("deny", new JsonArray(t.deny().stream().map(Probe::text).toList()));
      ts.add(o);
    }
    return new JsonObject().put("grants", gs).put("tests", ts);
  }

  private static List<Selector> selectors(Fields f, JsonObject grant, String at) {
    Object v = grant.getValue(at.substring(at.lastIndexOf('/') + 1));
    if (!(v instanceof JsonArray a) || a.isEmpty() || a.size() > MAX_SELECTORS) {
      f.error(at, v == null ? "is required" : "must be an array of 1-" + MAX_SELECTORS + " selectors");
      return null;
    }
    List<Selector> out = new ArrayList<>();
    for (int i = 0; i < a.size(); i++) {
      Selector s = a.getValue(i) instanceof String text ? selector(text) : null;
      if (s == null) {
        f.error(at + "/" + i, "must be '*', tag:<slug>, a node name or an IPv4 prefix such as 10.0.0.0/8");
        return null;
      }
      out.add(s);
    }
    return List.copyOf(out);
  }

  /** A selector from its text, or null when it is none of the four forms. */
  static Selector selector(String s) {
    if (s.equals("*")) return new Any();
    if (s.startsWith("tag:")) return NodeFormats.tag(s) ? new Tag(s) : null;
    int slash = s.indexOf('/');
    if (slash > 0) {
      long base = NodeFormats.ipv4(s, 0, slash);
      String bitsText = s.substring(slash + 1);
      if (base < 0 || bitsText.isEmpty() || bitsText.length() > 2 || !bitsText.chars().allMatch(c -> c >= '0' && c <= '9')
          || (bitsText.length() == 2 && bitsText.charAt(0) == '0')) {
        return null;
      }
      int bits = Integer.parseInt(bitsText);
      if (bits > 32) return null;
      int b = (int) base;
      // canonical prefixes only: 10.0.0.0/8, not 10.1.2.3/8 (which would silently mean the same)
      if (bits < 32 && (b << bits) != 0 && bits != 0) return null;
      if (bits == 0 && b != 0) return null;
      return new Prefix(s, b, bits);
    }
    return NodeFormats.name(s) ? new Host(s) : null;
  }

  private static List<PortRange> ports(Fields f, JsonObject grant, String at) {
    Object v = grant.getValue("ports");
    if (!(v instanceof JsonArray a) || a.isEmpty() || a.size() > MAX_PORTS) {
      f.error(at, v == null ? "is required" : "must be an array of 1-" + MAX_PORTS + " port entries");
      return null;
    }
    List<PortRange> out = new ArrayList<>();
    for (int i = 0; i < a.size(); i++) {
      PortRange p = a.getValue(i) instanceof String text ? port(text) : null;
      if (p == null) {
        f.error(at + "/" + i, "must be '*', 'icmp', or tcp/udp with a port or range 1-65535: tcp/5432, udp/53, tcp/8000-8100, tcp/*");
        return null;
      }
      out.add(p);
    }
    return List.copyOf(out);
  }

  static PortRange port(String s) {
    if (s.equals("*")) return new PortRange(s, "*", 1, 65535);
    if (s.equals("icmp")) return new PortRange(s, "icmp", 0, 0);
    int slash = s.indexOf('/');
    if (slash < 0) return null;
    String proto = s.substring(0, slash);
    if (!proto.equals("tcp") && !proto.equals("udp")) return null;
    String range = s.substring(slash + 1);
    if (range.equals("*")) return new PortRange(s, proto, 1, 65535);
    int dash = range.indexOf('-');
    int from = number(dash < 0 ? range : range.substring(0, dash));
    int to = dash < 0 ? from : number(range.substring(dash + 1));
    if (from < 1 || to < 1 || from > to) return null;
    return new PortRange(s, proto, from, to);
  }

  /** 1-65535 in plain ASCII digits without a leading zero, else -1 (the one rule for ports: {@link Ports}). */
  private static int number(String s) {
    return Ports.parse(s);
  }

  private static List<Probe> probes(Fields f, JsonObject test, String at, String key) {
    Object v = test.getValue(key);
    if (v == null) return List.of();
    if (!(v instanceof JsonArray a) || a.size() > MAX_PROBES) {
      f.error(at, "must be an array of at most " + MAX_PROBES + " entries");
      return List.of();
    }
    List<Probe> out = new ArrayList<>();
    for (int i = 0; i < a.size(); i++) {
      Probe p = a.getValue(i) instanceof String text ? probe(text) : null;
      if (p == null) {
        f.error(at + "/" + i, "must be <node name or tag>:<tcp|udp>/<port> or <node name or tag>:icmp, e.g. db-1:tcp/5432");
        continue;
      }
      out.add(p);
    }
    return List.copyOf(out);
  }

  static Probe probe(String s) {
    int colon = s.lastIndexOf(':');
    if (colon <= 0) return null;
    String target = s.substring(0, colon);
    String port = s.substring(colon + 1);
    if (!NodeFormats.name(target) && !NodeFormats.tag(target)) return null;
    if (port.equals("icmp")) return new Probe(s, target, "icmp", 0);
    PortRange r = port(port);
    if (r == null || r.from() != r.to() || r.proto().equals("*")) return null;
    return new Probe(s, target, r.proto(), r.from());
  }
}
