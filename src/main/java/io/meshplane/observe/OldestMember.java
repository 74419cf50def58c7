package io.meshplane.observe;

import com.hazelcast.core.HazelcastInstance;

/**
 * Which replica samples a mesh-wide gauge: the cluster's oldest member only (the others report 0), so the
 * maximum or the sum across replicas is the mesh's figure and the mesh is read once per interval.
 */
public final class OldestMember {
  private OldestMember() {}

  /** True on the cluster's oldest member; false on the others, and on a member leaving the cluster. */
  public static boolean isLocal(HazelcastInstance hz) {
    try {
      return hz.getCluster().getMembers().iterator().next().localMember();
    } catch (RuntimeException e) {
      return false; // leaving the cluster
    }
  }
}
