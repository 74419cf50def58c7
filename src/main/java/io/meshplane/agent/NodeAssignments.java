package io.meshplane.agent;

import io.meshplane.common.Ports;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * What the coordinator assigns to a node besides peers and rules: its ingress (each active, or drained by
 * the coordinator or by the node itself on {@code drain_ingress}) and the services bound to it, as the
 * answers give them and the heartbeat reports them back. Part of an {@link AgentSession}: small, its
 * collections created when first needed; not thread-safe.
 */
final class NodeAssignments {
  private static final Pattern SERVICE = Pattern.compile("^[a-z0-9][a-z0-9-]{0,62}:([0-9]{1,5})$");
  private static final String[] NO_STRINGS = new String[0];
  private static final boolean[] NO_FLAGS = new boolean[0];

  /** null before any answer. */
  private String[] ingressNames;
  private boolean[] ingressDrainedByCoordinator;
  /** Ingress the node drained itself (drain_ingress), by name; null: none. */
  private Set<String> drained;
  /** Ingress the node drained and the coordinator has since shown drained (null: none): shown active later, they were assigned anew. */
  private Set<String> confirmed;
  /** The services bound to the node, as answered; null before any answer. */
  private String[] services;

  /**
   * Takes the answer's {@code ingress} (at most {@link AgentSession#MAX_INGRESS}, valid names, no repeats).
   *
   * @return true when the ingress the node drained itself changed (what the state dir keeps)
   */
  boolean applyIngress(Object value) {
    if (!(value instanceof JsonArray given) || given.isEmpty()) {
      ingressNames = NO_STRINGS;
      ingressDrainedByCoordinator = NO_FLAGS;
      if (drained != null) {
        drained = null;
        return true;
      }
      return false;
    }
    List<String> names = new ArrayList<>(0);
    List<Boolean> coordinatorDrained = new ArrayList<>(0);
    boolean undrained = false;
    for (Object o : given) {
      if (names.size() == AgentSession.MAX_INGRESS) break;
      if (o instanceof JsonObject in && in.getValue("name") instanceof String n && AgentSession.LABEL.matcher(n).matches()
          && !names.contains(n)) {
        names.add(n);
        coordinatorDrained.add("drained".equals(in.getValue("state")));
        // drained by the node, shown drained, then active: assigned anew (API.md §9 replaces a drained ingress), so active again
        if (drained != null && drained.contains(n) && "drained".equals(in.getValue("state"))) {
          if (confirmed == null) confirmed = new HashSet<>(4);
          confirmed.add(n);
        } else if (confirmed != null && "active".equals(in.getValue("state")) && confirmed.remove(n)) {
          drained.remove(n);
          undrained = true;
        }
      }
    }
    ingressNames = names.isEmpty() ? NO_STRINGS : names.toArray(NO_STRINGS);
    ingressDrainedByCoordinator = new boolean[names.size()];
    for (int i = 0; i < names.size(); i++) ingressDrainedByCoordinator[i] = coordinatorDrained.get(i);
    // an ingress no longer assigned is forgotten: assigned again later, it starts active
    return (drained != null && drained.removeIf(n -> !names.contains(n))) || undrained;
  }

  /** Takes the answer's {@code services} (at most {@link AgentSession#MAX_SERVICES}, valid, no repeats). */
  void applyServices(Object value) {
    if (!(value instanceof JsonArray list) || list.isEmpty()) {
      services = NO_STRINGS;
      return;
    }
    List<String> out = new ArrayList<>(list.size());
    for (Object o : list) {
      if (out.size() == AgentSession.MAX_SERVICES) break;
      if (o instanceof String s && service(s) && !out.contains(s)) out.add(s);
    }
    services = out.toArray(NO_STRINGS);
  }

  /** {@code ssh:22}, read as the coordinator reads it: the port without a leading zero ({@link Ports}). */
  private static boolean service(String s) {
    var m = SERVICE.matcher(s);
    return m.matches() && Ports.parse(m.group(1)) > 0;
  }

  /** {@code drain_ingress}: false when no ingress of that name is assigned to the node. */
  boolean drain(String ingress) {
    if (ingressNames == null || !List.of(ingressNames).contains(ingress)) return false;
    if (drained == null) drained = new HashSet<>(4);
    drained.add(ingress);
    return true;
  }

  /** The ingress names, in the answer's order; null before any answer. */
  String[] ingressNames() {
    return ingressNames;
  }

  String ingressState(int i) {
    return ingressDrainedByCoordinator[i] || (drained != null && drained.contains(ingressNames[i])) ? "drained" : "active";
  }

  /** The services; null before any answer. */
  String[] serviceNames() {
    return services;
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

  /** The ingress the node drained itself, sorted (for the state dir). */
  JsonArray drainedJson() {
    JsonArray d = new JsonArray();
    if (drained != null) drained.stream().sorted().forEach(d::add);
    return d;
  }

  /** Restores what {@link #drainedJson()} wrote. */
  void restoreDrained(JsonArray d) {
    if (d == null || d.isEmpty()) return;
    drained = new HashSet<>();
    for (Object o : d) if (o instanceof String s) drained.add(s);
  }
}
