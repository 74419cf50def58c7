package io.meshplane.heartbeat;

import com.hazelcast.nio.serialization.compact.CompactReader;
import com.hazelcast.nio.serialization.compact.CompactSerializer;
import com.hazelcast.nio.serialization.compact.CompactWriter;
import java.util.Arrays;
import java.util.Objects;

/**
 * A node's live state in the cluster map: what its last accepted heartbeat said, and whether that has
 * reached PostgreSQL yet ({@code dirty}). Stored in Hazelcast's Compact format (field names live in a
 * schema once, not in every entry), which keeps an entry near the size of its data.
 *
 * @param heartbeatAt epoch ms of the last accepted heartbeat (indexed: the staleness scan reads it)
 * @param version random per write: lets the flusher clear {@code dirty} only when nothing changed since it read
 */
public record LiveNode(
    String team,
    String environment,
    long heartbeatAt,
    long version,
    boolean dirty,
    String[] endpoints,
    String publicKey,
    String relay,
    String[] routes,
    String telemetry) {

  public static final String HEARTBEAT_FIELD = "heartbeatAt";
  public static final String DIRTY_FIELD = "dirty";

  public LiveNode clean() {
    return new LiveNode(team, environment, heartbeatAt, version, false, endpoints, publicKey, relay, routes, telemetry);
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof LiveNode n && heartbeatAt == n.heartbeatAt && version == n.version && dirty == n.dirty
        && team.equals(n.team) && environment.equals(n.environment) && Arrays.equals(endpoints, n.endpoints)
        && Objects.equals(publicKey, n.publicKey) && relay.equals(n.relay) && Arrays.equals(routes, n.routes)
        && telemetry.equals(n.telemetry);
  }

  @Override
  public int hashCode() {
    return Long.hashCode(version) * 31 + Long.hashCode(heartbeatAt);
  }

  /** The Compact serializer registered with the cluster (no Java serialization anywhere). */
  public static final class Serializer implements CompactSerializer<LiveNode> {
    @Override
    public LiveNode read(CompactReader in) {
      return new LiveNode(in.readString("team"), in.readString("environment"), in.readInt64(HEARTBEAT_FIELD),
          in.readInt64("version"), in.readBoolean(DIRTY_FIELD), in.readArrayOfString("endpoints"), in.readString("publicKey"),
          in.readString("relay"), in.readArrayOfString("routes"), in.readString("telemetry"));
    }

    @Override
    public void write(CompactWriter out, LiveNode n) {
      out.writeString("team", n.team());
      out.writeString("environment", n.environment());
      out.writeInt64(HEARTBEAT_FIELD, n.heartbeatAt());
      out.writeInt64("version", n.version());
      out.writeBoolean(DIRTY_FIELD, n.dirty());
      out.writeArrayOfString("endpoints", n.endpoints());
      out.writeString("publicKey", n.publicKey());
      out.writeString("relay", n.relay());
      out.writeArrayOfString("routes", n.routes());
      out.writeString("telemetry", n.telemetry());
    }

    @Override
    public String getTypeName() {
      return "meshplane.LiveNode";
    }

    @Override
    public Class<LiveNode> getCompactClass() {
      return LiveNode.class;
    }
  }
}
