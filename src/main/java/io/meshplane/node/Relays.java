package io.meshplane.node;

import java.util.List;

/**
 * The relays configured for this mesh ({@code relays} in config/meshplane.yaml): where nodes that
 * cannot reach each other directly meet. Enrollment assigns each node the least-loaded relay of its
 * region (or of all, when it names none); the heartbeat answer's {@code relay} is that assignment.
 */
public record Relays(List<Relay> all) {
  /** One relay: a DNS-label name (unique), a region slug, and the URL agents connect to. */
  public record Relay(String name, String region, String url) {}

  public static final Relays NONE = new Relays(List.of());

  public Relays {
    all = List.copyOf(all);
  }

  /** The names of the relays in {@code region} (all relays when null), in configuration order. */
  public List<String> names(String region) {
    return all.stream().filter(r -> region == null || r.region().equals(region)).map(Relay::name).toList();
  }

  public boolean has(String name) {
    return all.stream().anyMatch(r -> r.name().equals(name));
  }

  public boolean hasRegion(String region) {
    return all.stream().anyMatch(r -> r.region().equals(region));
  }
}
