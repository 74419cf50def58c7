package io.meshplane.policy;

import io.meshplane.common.Refusal;
import io.meshplane.node.ChangeLog.NodeFacts;
import io.meshplane.policy.PolicyDocument.Grant;
import io.meshplane.policy.PolicyDocument.PolicyTest;
import io.meshplane.policy.PolicyDocument.Probe;
import java.util.ArrayList;
import java.util.List;

/**
 * A policy evaluated against an inventory snapshot, for what must not touch the live model: the
 * policy's own tests on PUT, and previews. O(nodes x grants) per question, bounded by
 * {@link #MAX_PAIRS} node pairs per test run.
 */
final class Evaluation {
  /** The most (source, destination) node pairs one PUT's tests may check. */
  static final int MAX_PAIRS = 200_000;

  private final PolicyDocument policy;
  private final List<NodeFacts> nodes;

  Evaluation(PolicyDocument policy, List<NodeFacts> nodes) {
    this.policy = policy;
    this.nodes = nodes;
  }

  boolean allowed(NodeFacts src, NodeFacts dst, String proto, int port) {
    return !allowing(src, dst, proto, port).isEmpty();
  }

  /** The grants that let {@code src} reach {@code dst} on proto/port. */
  List<Grant> allowing(NodeFacts src, NodeFacts dst, String proto, int port) {
    List<Grant> out = new ArrayList<>();
    for (Grant g : policy.grants()) {
      if (g.inSrc(src.name(), src.tags(), src.address()) && g.inDst(dst.name(), dst.tags(), dst.address()) && g.allows(proto, port)) {
        out.add(g);
      }
    }
    return out;
  }

  boolean peers(NodeFacts a, NodeFacts b) {
    for (Grant g : policy.grants()) {
      if (g.inSrc(a.name(), a.tags(), a.address()) && g.inDst(b.name(), b.tags(), b.address())) return true;
      if (g.inSrc(b.name(), b.tags(), b.address()) && g.inDst(a.name(), a.tags(), a.address())) return true;
    }
    return false;
  }

  /** The node's peers under this policy, in inventory order. */
  List<NodeFacts> peersOf(NodeFacts node) {
    List<NodeFacts> out = new ArrayList<>();
    for (NodeFacts n : nodes) if (!n.id().equals(node.id()) && peers(node, n)) out.add(n);
    return out;
  }

  /** acl_matches of the node under this policy. */
  List<String> matches(NodeFacts n) {
    List<String> out = new ArrayList<>();
    for (Grant g : policy.grants()) {
      boolean src = g.inSrc(n.name(), n.tags(), n.address());
      boolean dst = g.inDst(n.name(), n.tags(), n.address());
      if (src || dst) out.add(g.match(src, dst));
    }
    return out;
  }

  List<NodeFacts> named(String nameOrTag) {
    List<NodeFacts> out = new ArrayList<>();
    for (NodeFacts n : nodes) {
      if (nameOrTag.startsWith("tag:") ? List.of(n.tags()).contains(nameOrTag) : n.name().equals(nameOrTag)) out.add(n);
    }
    return out;
  }

  /** Runs the policy's tests; the failures, each naming its test by JSON pointer (empty: all pass). */
  List<Refusal.FieldError> runTests() {
    List<Refusal.FieldError> failures = new ArrayList<>();
    long pairs = 0;
    for (PolicyTest t : policy.tests()) {
      String at = "/tests/" + t.index();
      List<NodeFacts> sources = named(t.src());
      if (sources.isEmpty()) {
        failures.add(new Refusal.FieldError(at + "/src", "test " + t.index() + ": " + t.src() + " names no node of this team and environment"));
        continue;
      }
      for (int kind = 0; kind < 2; kind++) {
        List<Probe> probes = kind == 0 ? t.accept() : t.deny();
        String key = kind == 0 ? "accept" : "deny";
        for (int i = 0; i < probes.size(); i++) {
          Probe p = probes.get(i);
          List<NodeFacts> targets = named(p.target());
          String field = at + "/" + key + "/" + i;
          if (targets.isEmpty()) {
            failures.add(new Refusal.FieldError(field, "test " + t.index() + ": " + p.target() + " names no node of this team and environment"));
            continue;
          }
          pairs += (long) sources.size() * targets.size();
          if (pairs > MAX_PAIRS) {
            throw Refusal.invalid(field, "the tests check more than " + MAX_PAIRS + " node pairs: name nodes rather than large tags");
          }
          String failure = probe(sources, targets, p, kind == 0);
          if (failure != null) failures.add(new Refusal.FieldError(field, "test " + t.index() + " failed: " + failure));
        }
      }
    }
    return failures;
  }

  private String probe(List<NodeFacts> sources, List<NodeFacts> targets, Probe p, boolean accept) {
    String port = p.proto().equals("icmp") ? "icmp" : p.proto() + "/" + p.port();
    for (NodeFacts s : sources) {
      for (NodeFacts d : targets) {
        if (s.id().equals(d.id())) continue;
        boolean ok = allowed(s, d, p.proto(), p.port());
        if (accept && !ok) return s.name() + " cannot reach " + d.name() + " on " + port;
        if (!accept && ok) return s.name() + " can reach " + d.name() + " on " + port + " (" + allowing(s, d, p.proto(), p.port()).get(0).text() + ")";
      }
    }
    return null;
  }
}
