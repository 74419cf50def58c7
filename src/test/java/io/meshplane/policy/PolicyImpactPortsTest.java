package io.meshplane.policy;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.util.BitSet;
import java.util.List;
import org.junit.jupiter.api.Test;

/** What a set of grants opens, and the difference of two such sets, as the impact names them ({@link PolicyImpact.Ports}). */
class PolicyImpactPortsTest {

  @Test
  void everythingMinusOnePortLeavesTheRangesAroundIt() {
    PolicyImpact.Ports all = ports("*");
    PolicyImpact.Ports ssh = ports("tcp/22");
    assertEquals(List.of("tcp/1-21", "tcp/23-65535", "udp/*", "icmp"), all.minus(ssh));
    assertEquals(List.of(), ssh.minus(all));
  }

  @Test
  void overlappingRangesMergeBeforeTheyAreCompared() {
    PolicyImpact.Ports wide = ports("tcp/1-100", "tcp/50-200", "tcp/201", "udp/53");
    assertEquals(List.of("tcp/1-99", "tcp/101-201", "udp/53"), wide.minus(ports("tcp/100")));
    assertEquals(ports("tcp/1-201", "udp/53"), wide, "merged: the same opening compares equal");
    assertEquals(List.of("tcp/5433"), ports("tcp/5432-5433").minus(ports("tcp/5432", "udp/5433")));
    assertEquals(List.of("tcp/*"), ports("tcp/*").minus(ports("udp/*", "icmp")));
  }

  /** One grant {@code * -> *} on {@code ports}: what it opens. */
  static PolicyImpact.Ports ports(String... ports) {
    PolicyDocument doc = PolicyDocument.parse(new JsonObject().put("grants", new JsonArray().add(new JsonObject()
        .put("src", new JsonArray().add("*")).put("dst", new JsonArray().add("*")).put("ports", new JsonArray(List.of((Object[]) ports))))));
    BitSet one = new BitSet();
    one.set(0);
    return PolicyImpact.Ports.of(doc, one);
  }
}
