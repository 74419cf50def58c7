package io.meshplane.meshca;

import io.meshplane.access.Boundary;
import io.meshplane.common.Times;
import io.vertx.core.Future;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.sqlclient.Pool;
import java.math.BigInteger;
import java.time.Duration;
import java.time.Instant;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.bouncycastle.asn1.x509.SubjectKeyIdentifier;
import org.bouncycastle.cert.X509CertificateHolder;

/**
 * What the dashboard and the gauges read of MeshCA's state (docs/API.md, "MeshCA"): the CA certificates
 * ({@code GET /meshca/authorities}) and the nodes by the state of their current certificate
 * ({@code GET /meshca/summary}). Every read is on the read pool; a summary is kept {@value #KEEP_MS} ms
 * per boundary (and one query in flight per boundary), so that dashboards polling it cost one query per
 * boundary and interval whatever their number.
 */
final class MeshcaStatus {
  /** How long a boundary's summary is reused. */
  static final long KEEP_MS = 5000;
  /** The most boundaries whose summaries are kept (beyond, the cache starts again empty). */
  static final int KEPT = 256;
  /** The buckets' names, in {@link CertificateRepository#BUCKETS}' order, the last one unbounded. */
  static final List<String> BUCKET_NAMES = List.of("under_1h", "1h_6h", "6h_12h", "12h_24h", "1d_7d", "over_7d");

  private record Kept(long at, Future<JsonObject> answer) {}

  private final Pool reads;
  private final CertificateRepository certificates;
  private final Map<Boundary, Kept> kept = new ConcurrentHashMap<>();

  MeshcaStatus(Pool reads, CertificateRepository certificates) {
    this.reads = reads;
    this.certificates = certificates;
  }

  /** The CA certificates, those in use first ({@link Authorities#all}), each as {@link #json(Authorities.Authority, Instant)}. */
  Future<JsonObject> authorities() {
    return Authorities.all(reads).map(list -> {
      Instant now = Times.now();
      JsonArray items = new JsonArray();
      for (Authorities.Authority a : list) items.add(json(a, now));
      return new JsonObject().put("items", items).put("at", Times.format(now));
    });
  }

  static JsonObject json(Authorities.Authority a, Instant now) {
    X509CertificateHolder c = a.certificate();
    SubjectKeyIdentifier ski = SubjectKeyIdentifier.fromExtensions(c.getExtensions());
    BigInteger serial = c.getSerialNumber();
    return new JsonObject()
        .put("id", a.id())
        .put("kind", a.kind())
        .put("state", a.state())
        .put("parent", a.parent())
        .put("subject", c.getSubject().toString())
        .put("serial", Pki.hex(serial))
        .put("subject_key_id", ski == null ? null : HexFormat.of().formatHex(ski.getKeyIdentifier()))
        .put("not_before", Times.format(c.getNotBefore().toInstant()))
        .put("not_after", Times.format(a.notAfter()))
        .put("expires_in_s", Duration.between(now, a.notAfter()).toSeconds())
        .put("pem", a.pem());
  }

  /** The summary of {@code boundary}: kept {@value #KEEP_MS} ms; a failed query is not kept. */
  Future<JsonObject> summary(Boundary boundary) {
    long now = System.currentTimeMillis();
    Kept k = kept.get(boundary);
    if (k != null && now - k.at() < KEEP_MS && !k.answer().failed()) return k.answer();
    if (kept.size() >= KEPT) kept.clear();
    Future<JsonObject> answer = compute(boundary);
    kept.put(boundary, new Kept(now, answer));
    return answer;
  }

  /** The counts behind {@link #summary}, never kept: the gauges' sample. */
  Future<CertificateRepository.Summary> counts(Boundary boundary) {
    return certificates.summary(boundary, Times.now());
  }

  private Future<JsonObject> compute(Boundary boundary) {
    Instant now = Times.now();
    return certificates.summary(boundary, now).compose(s -> certificates.revokedUnexpired(boundary, now).map(revoked -> {
      JsonArray buckets = new JsonArray();
      Duration from = Duration.ZERO;
      for (int i = 0; i < s.buckets().length; i++) {
        Duration to = i < CertificateRepository.BUCKETS.size() ? CertificateRepository.BUCKETS.get(i) : null;
        buckets.add(new JsonObject().put("name", BUCKET_NAMES.get(i)).put("from_s", from.toSeconds())
            .put("to_s", to == null ? null : to.toSeconds()).put("count", s.buckets()[i]));
        from = to;
      }
      return new JsonObject()
          .put("at", Times.format(now))
          .put("scope", new JsonObject().put("team", boundary.team()).put("environment", boundary.environment()))
          .put("nodes", new JsonObject().put("valid", s.valid()).put("expiring", s.expiring()).put("expired", s.expired())
              .put("none", s.none()))
          .put("revoked_unexpired", revoked)
          .put("time_to_expiry", buckets);
    }));
  }
}
