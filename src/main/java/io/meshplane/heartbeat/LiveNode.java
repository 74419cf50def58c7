package io.meshplane.heartbeat;

import com.hazelcast.nio.serialization.FieldKind;
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
 * live in PostgreSQL. The write-behind clears {@code dirty} only where the entry still equals the
 * value it wrote ({@link FlushProcessors.Settle}): a heartbeat accepted since then carries a new
 * {@code heartbeatAt}, so its mark survives.
 *
 * @param heartbeatAt epoch ms of the last accepted heartbeat (indexed: the staleness scan and the
 *     write-behind's window read it)
 * @param knownPeers the peers version the heartbeat acknowledged in {@code known} (-1: none sent);
 *     with {@code knownAcl}, the node record's {@code policy_sync}. The write-behind writes both
 *     ({@code nodes.acknowledged_*}, V9), stamping when they changed; a cold start seeds them back.
 * @param services the services the agent reported it serves (empty when it sent none): compared with
 *     the bound ones for {@code policy_sync.services}. Not written to PostgreSQL.
 * @param pkiBundle the MeshCA trust bundle version the heartbeat reported holding ("" when it sent no
 *     {@code pki} block): with {@code pkiIssuer}, the node record's {@code pki_sync}, and what a CA
 *     rotation counts before it advances (a query on the map). Not written to PostgreSQL.
 * @param pkiIssuer the id of the authority that issued the certificate the node holds ("" for none)
 * @param pkiSerial the serial of that certificate ("" for none): what a reissue operation is checked against
 * @param ingressVersion the ingress routes version the heartbeat reported applying ("" for none): the node
 *     record's {@code ingress_sync}. Not written to PostgreSQL.
 * @param ingressStats the per-route counters of that report, as compact JSON ("" for none; at most 64
 *     routes, re-encoded from the validated report): the node record's {@code ingress_stats}
 * @param wafReport the traffic policy the node reported enforcing, a compile error and its probe, as
 *     compact JSON without the samples ("" for none; re-encoded from the validated report): the node
 *     record's {@code waf_sync}. Not written to PostgreSQL.
 * @param wafSamples the samples of denied requests of that report, as a compact JSON list ("" for none;
 *     at most 5, bounded): what {@code GET /v1/waf/samples} and a preview read. Not written to PostgreSQL.
 */
public record LiveNode(
    long heartbeatAt,
    boolean dirty,
    String[] endpoints,
    String publicKey,
    String relay,
    String[] routes,
    String telemetry,
    long knownPeers,
    long knownAcl,
    String[] services,
    String pkiBundle,
    String pkiIssuer,
    String pkiSerial,
    String ingressVersion,
    String ingressStats,
    String wafReport,
    String wafSamples) {

  public static final String PKI_BUNDLE_FIELD = "pkiBundle";
  public static final String PKI_ISSUER_FIELD = "pkiIssuer";
  public static final String PKI_SERIAL_FIELD = "pkiSerial";

  /** An entry without a traffic-policy report (a heartbeat whose {@code ingress_routes} block has no {@code waf}). */
  public LiveNode(long heartbeatAt, boolean dirty, String[] endpoints, String publicKey, String relay, String[] routes, String telemetry,
      long knownPeers, long knownAcl, String[] services, String pkiBundle, String pkiIssuer, String pkiSerial, String ingressVersion,
      String ingressStats) {
    this(heartbeatAt, dirty, endpoints, publicKey, relay, routes, telemetry, knownPeers, knownAcl, services, pkiBundle, pkiIssuer, pkiSerial,
        ingressVersion, ingressStats, "", "");
  }

  /** An entry without ingress routes' fields (a heartbeat without an {@code ingress_routes} block). */
  public LiveNode(long heartbeatAt, boolean dirty, String[] endpoints, String publicKey, String relay, String[] routes, String telemetry,
      long knownPeers, long knownAcl, String[] services, String pkiBundle, String pkiIssuer, String pkiSerial) {
    this(heartbeatAt, dirty, endpoints, publicKey, relay, routes, telemetry, knownPeers, knownAcl, services, pkiBundle, pkiIssuer, pkiSerial,
        "", "");
  }

  /** An entry without MeshCA's fields (a heartbeat without a {@code pki} block). */
  public LiveNode(long heartbeatAt, boolean dirty, String[] endpoints, String publicKey, String relay, String[] routes, String telemetry,
      long knownPeers, long knownAcl, String[] services) {
    this(heartbeatAt, dirty, endpoints, publicKey, relay, routes, telemetry, knownPeers, knownAcl, services, "", "", "");
  }

  /** An entry without acknowledged versions or reported services (seeded from PostgreSQL, or a test's). */
  public LiveNode(long heartbeatAt, boolean dirty, String[] endpoints, String publicKey, String relay, String[] routes, String telemetry) {
    this(heartbeatAt, dirty, endpoints, publicKey, relay, routes, telemetry, -1, -1, new String[0]);
  }

  /**
   * The indexed field: the heartbeat's second, not its millisecond. Hazelcast's hash index keeps one
   * small map per distinct value, so a million nodes beating every 30 s share ~30 values instead of a
   * million; queries on it are then refined with {@code heartbeatAt}. Counted from 2020-01-01 UTC, so
   * 32 bits last until 2088 (from 1970 they would end in 2038).
   */
  public static final String HEARTBEAT_SECOND_FIELD = "heartbeatSecond";
  public static final String DIRTY_FIELD = "dirty";
  /** 2020-01-01T00:00:00Z in epoch seconds: the origin of {@link #HEARTBEAT_SECOND_FIELD}. */
  static final long SECOND_ORIGIN = 1_577_836_800L;

  /** The second of {@code epochMillis}, as stored in {@link #HEARTBEAT_SECOND_FIELD}. */
  public static int second(long epochMillis) {
    return Math.toIntExact(Math.floorDiv(epochMillis, 1000L) - SECOND_ORIGIN);
  }

  public LiveNode clean() {
    return new LiveNode(heartbeatAt, false, endpoints, publicKey, relay, routes, telemetry, knownPeers, knownAcl, services, pkiBundle, pkiIssuer, pkiSerial,
        ingressVersion, ingressStats, wafReport, wafSamples);
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof LiveNode n && heartbeatAt == n.heartbeatAt && dirty == n.dirty && Arrays.equals(endpoints, n.endpoints)
        && Objects.equals(publicKey, n.publicKey) && relay.equals(n.relay) && Arrays.equals(routes, n.routes)
        && telemetry.equals(n.telemetry) && knownPeers == n.knownPeers && knownAcl == n.knownAcl
        && Arrays.equals(services, n.services) && pkiBundle.equals(n.pkiBundle) && pkiIssuer.equals(n.pkiIssuer) && pkiSerial.equals(n.pkiSerial)
        && ingressVersion.equals(n.ingressVersion) && ingressStats.equals(n.ingressStats)
        && wafReport.equals(n.wafReport) && wafSamples.equals(n.wafSamples);
  }

  @Override
  public int hashCode() {
    return Long.hashCode(heartbeatAt) * 31 + Arrays.hashCode(endpoints);
  }

  /**
   * The Compact serializer registered with the cluster (no Java serialization anywhere). Laid out for
   * size, a million entries per cluster: the time as the indexed second plus a 16-bit millisecond (not
   * a second 64-bit copy), endpoints and routes as one comma-joined string each (their formats never
   * contain a comma; an array costs a count and an offset per item), and empty strings as null.
   */
  public static final class Serializer implements CompactSerializer<LiveNode> {
    private static final String[] NONE = new String[0];

    @Override
    public LiveNode read(CompactReader in) {
      long at = (in.readInt32(HEARTBEAT_SECOND_FIELD) + SECOND_ORIGIN) * 1000L + in.readInt16("heartbeatMilli");
      return new LiveNode(at, in.readBoolean(DIRTY_FIELD), split(in.readString("endpoints")), orEmpty(in.readString("publicKey")),
          orEmpty(in.readString("relay")), split(in.readString("routes")), in.readString("telemetry"), in.readInt64("knownPeers"),
          in.readInt64("knownAcl"),
          // absent in entries written before services were kept (a rolling upgrade): none reported
          in.getFieldKind("services") == FieldKind.STRING ? split(in.readString("services")) : NONE,
          // absent in entries written before MeshCA's fields (a rolling upgrade): none reported
          in.getFieldKind(PKI_BUNDLE_FIELD) == FieldKind.STRING ? orEmpty(in.readString(PKI_BUNDLE_FIELD)) : "",
          in.getFieldKind(PKI_ISSUER_FIELD) == FieldKind.STRING ? orEmpty(in.readString(PKI_ISSUER_FIELD)) : "",
          in.getFieldKind(PKI_SERIAL_FIELD) == FieldKind.STRING ? orEmpty(in.readString(PKI_SERIAL_FIELD)) : "",
          // absent in entries written before ingress routes (a rolling upgrade): none reported
          in.getFieldKind("ingressVersion") == FieldKind.STRING ? orEmpty(in.readString("ingressVersion")) : "",
          in.getFieldKind("ingressStats") == FieldKind.STRING ? orEmpty(in.readString("ingressStats")) : "",
          // absent in entries written before traffic policies (a rolling upgrade): none reported
          in.getFieldKind("wafReport") == FieldKind.STRING ? orEmpty(in.readString("wafReport")) : "",
          in.getFieldKind("wafSamples") == FieldKind.STRING ? orEmpty(in.readString("wafSamples")) : "");
    }

    @Override
    public void write(CompactWriter out, LiveNode n) {
      out.writeInt32(HEARTBEAT_SECOND_FIELD, second(n.heartbeatAt()));
      out.writeInt16("heartbeatMilli", (short) Math.floorMod(n.heartbeatAt(), 1000L));
      out.writeBoolean(DIRTY_FIELD, n.dirty());
      out.writeString("endpoints", join(n.endpoints()));
      out.writeString("publicKey", emptyToNull(n.publicKey()));
      out.writeString("relay", emptyToNull(n.relay()));
      out.writeString("routes", join(n.routes()));
      out.writeString("telemetry", n.telemetry());
      out.writeInt64("knownPeers", n.knownPeers());
      out.writeInt64("knownAcl", n.knownAcl());
      out.writeString("services", join(n.services()));
      // "" (not null) for none: the rotation's queries compare with it
      out.writeString(PKI_BUNDLE_FIELD, n.pkiBundle());
      out.writeString(PKI_ISSUER_FIELD, n.pkiIssuer());
      out.writeString(PKI_SERIAL_FIELD, emptyToNull(n.pkiSerial()));
      out.writeString("ingressVersion", emptyToNull(n.ingressVersion()));
      out.writeString("ingressStats", emptyToNull(n.ingressStats()));
      out.writeString("wafReport", emptyToNull(n.wafReport()));
      out.writeString("wafSamples", emptyToNull(n.wafSamples()));
    }

    private static String join(String[] items) {
      return items == null || items.length == 0 ? null : items.length == 1 ? items[0] : String.join(",", items);
    }

    private static String[] split(String joined) {
      return joined == null ? NONE : joined.split(",", -1);
    }

    private static String emptyToNull(String s) {
      return s == null || s.isEmpty() ? null : s;
    }

    private static String orEmpty(String s) {
      return s == null ? "" : s;
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
