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
 * <p>Kept small on purpose (a million of these per cluster): no team, name or record fields, which
 * live in PostgreSQL. The flusher clears {@code dirty} with {@code replace(key, read, clean)}: a
 * heartbeat written after the read changes the binary value, so its mark survives; one identical to
 * what was read needs no second write anyway.
 *
 * @param heartbeatAt epoch ms of the last accepted heartbeat (indexed: the staleness scan and the
 *     write-behind's window read it)
 */
public record LiveNode(
    long heartbeatAt,
    boolean dirty,
    String[] endpoints,
    String publicKey,
    String relay,
    String[] routes,
    String telemetry) {

  /**
   * The indexed field: the heartbeat's second, not its millisecond. Hazelcast's sorted index keeps one
   * small map per distinct value, so a million nodes beating every 30 s share ~30 values instead of a
   * million; queries on it are then refined with {@code heartbeatAt}.
   */
  public static final String HEARTBEAT_SECOND_FIELD = "heartbeatSecond";
  public static final String DIRTY_FIELD = "dirty";

  /** The second of {@code epochMillis}, as stored in {@link #HEARTBEAT_SECOND_FIELD}. */
  public static int second(long epochMillis) {
    return (int) Math.floorDiv(epochMillis, 1000L);
  }

  public LiveNode clean() {
    return new LiveNode(heartbeatAt, false, endpoints, publicKey, relay, routes, telemetry);
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof LiveNode n && heartbeatAt == n.heartbeatAt && dirty == n.dirty && Arrays.equals(endpoints, n.endpoints)
        && Objects.equals(publicKey, n.publicKey) && relay.equals(n.relay) && Arrays.equals(routes, n.routes)
        && telemetry.equals(n.telemetry);
  }

  @Override
  public int hashCode() {
    return Long.hashCode(heartbeatAt) * 31 + Arrays.hashCode(endpoints);
  }

  /** The Compact serializer registered with the cluster (no Java serialization anywhere). */
  public static final class Serializer implements CompactSerializer<LiveNode> {
    @Override
    public LiveNode read(CompactReader in) {
      return new LiveNode(in.readInt64("heartbeatAt"), in.readBoolean(DIRTY_FIELD), in.readArrayOfString("endpoints"),
          in.readString("publicKey"),
          in.readString("relay"), in.readArrayOfString("routes"), in.readString("telemetry"));
    }

    @Override
    public void write(CompactWriter out, LiveNode n) {
      out.writeInt64("heartbeatAt", n.heartbeatAt());
      out.writeInt32(HEARTBEAT_SECOND_FIELD, second(n.heartbeatAt()));
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
