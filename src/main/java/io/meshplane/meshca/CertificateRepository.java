package io.meshplane.meshca;

import io.meshplane.access.Boundary;
import io.meshplane.common.Sql;
import io.vertx.core.Future;
import io.vertx.core.buffer.Buffer;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.SqlClient;
import io.vertx.sqlclient.Tuple;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;

/** The issued node certificates ({@code meshca_certificates}): the one place their SQL is written. */
final class CertificateRepository {
  /**
   * One row. {@code certificate} (DER) is read only for a single certificate, never for a list.
   * {@code hostnames}: the DNS names of a hostname certificate ({@link HostnameSigner}); null for a node certificate.
   */
  record Cert(String serial, String nodeId, String team, String environment, String spkiSha256, String wireguardKey, String issuer,
      Instant notBefore, Instant notAfter, Instant issuedAt, Instant revokedAt, String reason, byte[] certificate, java.util.List<String> hostnames) {
    /** revoked, expired, expiring (past half its lifetime: its node should have renewed by then) or valid, at {@code now}. */
    String state(Instant now) {
      if (revokedAt != null) return "revoked";
      if (!notAfter.isAfter(now)) return "expired";
      Instant half = notBefore.plus(Duration.between(notBefore, notAfter).dividedBy(2));
      return now.isBefore(half) ? "valid" : "expiring";
    }
  }

  /** The list's filters (null for none) and its order: {@code latest} = latest to expire first (else soonest first). */
  record Filter(String nodeId, Duration expiringWithin, String state, boolean latest) {}

  private static final String COLUMNS = "serial, node_id, team, environment, spki_sha256, wireguard_key, issuer, not_before, not_after, "
      + "issued_at, revoked_at, reason, hostnames";

  private final Pool pool;
  private final Pool reads;

  CertificateRepository(Pool pool, Pool reads) {
    this.pool = pool;
    this.reads = reads;
  }

  Future<Void> insert(SqlClient tx, Cert c) {
    return tx.preparedQuery("INSERT INTO meshca_certificates (serial, node_id, team, environment, spki_sha256, wireguard_key, issuer, "
            + "certificate, not_before, not_after, issued_at, hostnames) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)")
        .execute(Tuple.from(new Object[] {c.serial(), c.nodeId(), c.team(), c.environment(), c.spkiSha256(), c.wireguardKey(), c.issuer(),
            Buffer.buffer(c.certificate()), Sql.odt(c.notBefore()), Sql.odt(c.notAfter()), Sql.odt(c.issuedAt()),
            c.hostnames() == null ? null : c.hostnames().toArray(new String[0])}))
        .mapEmpty();
  }

  /** One certificate inside {@code boundary} (with its DER), or null. */
  Future<Cert> get(Boundary boundary, String serial) {
    return pool.preparedQuery("SELECT " + COLUMNS + ", certificate FROM meshca_certificates WHERE serial = $3 AND " + Sql.inScope(1, 2))
        .execute(Tuple.of(boundary.team(), boundary.environment(), serial))
        .map(rows -> rows.size() == 0 ? null : map(rows.iterator().next(), true));
  }

  /**
   * A page of certificates inside {@code boundary}, in (not_after, serial) order (soonest to expire
   * first; the reverse with {@link Filter#latest}), after the key ({@code afterNotAfter}, {@code afterSerial}) when given; {@code limit} rows.
   * Each filter is a range of not_after or a test of revoked_at, which the V19 indexes serve in order.
   */
  Future<List<Cert>> list(Boundary boundary, Filter f, Instant now, Instant afterNotAfter, String afterSerial, int limit) {
    List<Object> p = new ArrayList<>();
    StringBuilder sql = new StringBuilder("SELECT " + COLUMNS + " FROM meshca_certificates WHERE true");
    sql.append(Sql.inScope(boundary.team(), boundary.environment(), p));
    if (f.nodeId() != null) {
      p.add(f.nodeId());
      sql.append(" AND node_id = $").append(p.size());
    }
    if (f.expiringWithin() != null) {
      p.add(Sql.odt(now));
      sql.append(" AND revoked_at IS NULL AND not_after > $").append(p.size());
      p.add(Sql.odt(now.plus(f.expiringWithin())));
      sql.append(" AND not_after <= $").append(p.size());
    }
    if ("revoked".equals(f.state())) {
      sql.append(" AND revoked_at IS NOT NULL");
    } else if (f.state() != null) {
      p.add(Sql.odt(now));
      int at = p.size();
      switch (f.state()) {
        case "expired" -> sql.append(" AND revoked_at IS NULL AND not_after <= $").append(at);
        case "expiring" -> sql.append(" AND revoked_at IS NULL AND not_after > $").append(at)
            .append(" AND not_before + (not_after - not_before) / 2 <= $").append(at);
        default -> sql.append(" AND revoked_at IS NULL AND not_before + (not_after - not_before) / 2 > $").append(at);
      }
    }
    if (afterNotAfter != null) {
      p.add(Sql.odt(afterNotAfter));
      p.add(afterSerial);
      sql.append(" AND (not_after, serial) ").append(f.latest() ? "<" : ">").append(" ($").append(p.size() - 1).append(", $")
          .append(p.size()).append(")");
    }
    p.add(limit);
    sql.append(f.latest() ? " ORDER BY not_after DESC, serial DESC LIMIT $" : " ORDER BY not_after, serial LIMIT $").append(p.size());
    return reads.preparedQuery(sql.toString()).execute(Tuple.from(p)).map(rows -> Sql.list(rows, r -> map(r, false)));
  }

  /**
   * The upper bounds of the summary's buckets of time to expiry (the last bucket has none): under 1 h,
   * 1–6 h, 6–12 h, 12–24 h, 1–7 days, over 7 days.
   */
  static final List<Duration> BUCKETS = List.of(Duration.ofHours(1), Duration.ofHours(6), Duration.ofHours(12), Duration.ofHours(24),
      Duration.ofDays(7));

  /**
   * The nodes of a boundary by the state of their current certificate, the latest unrevoked one (by
   * not_after): {@code valid}, {@code expiring} (past half its lifetime), {@code expired}, {@code none}
   * (no unrevoked certificate); {@code buckets} counts the unexpired ones by time to expiry
   * ({@link #BUCKETS}, one more than its bounds).
   */
  record Summary(long valid, long expiring, long expired, long none, long[] buckets) {}

  /**
   * {@link Summary} of the nodes inside {@code boundary} at {@code now}, on the read pool: one probe per
   * node of the partial index {@code meshca_certificates_current} (V21), read without the table (about
   * 330 ms for 100,000 nodes); the nodes of a team and environment through {@code nodes_scope_id}.
   */
  Future<Summary> summary(Boundary boundary, Instant now) {
    List<Object> p = new ArrayList<>();
    p.add(Sql.odt(now));
    StringBuilder buckets = new StringBuilder();
    Instant from = now;
    for (Duration d : BUCKETS) {
      p.add(Sql.odt(now.plus(d)));
      buckets.append(", count(*) FILTER (WHERE c.not_after > ").append(from == now ? "$1" : "$" + (p.size() - 1))
          .append(" AND c.not_after <= $").append(p.size()).append(") AS b").append(p.size() - 2);
      from = now.plus(d);
    }
    buckets.append(", count(*) FILTER (WHERE c.not_after > $").append(p.size()).append(") AS b").append(p.size() - 1);
    String sql = "SELECT count(*) FILTER (WHERE c.not_before + (c.not_after - c.not_before) / 2 > $1) AS valid, "
        + "count(*) FILTER (WHERE c.not_after > $1 AND c.not_before + (c.not_after - c.not_before) / 2 <= $1) AS expiring, "
        + "count(*) FILTER (WHERE c.not_after <= $1) AS expired, count(*) FILTER (WHERE c.not_after IS NULL) AS none" + buckets
        + " FROM nodes n LEFT JOIN LATERAL (SELECT c.not_before, c.not_after FROM meshca_certificates c "
        + "WHERE c.node_id = n.id AND c.revoked_at IS NULL AND c.hostnames IS NULL ORDER BY c.not_after DESC LIMIT 1) c ON true WHERE true"
        + Sql.inScope(boundary.team(), boundary.environment(), p).replace(" team =", " n.team =").replace(" environment =", " n.environment =");
    return reads.preparedQuery(sql).execute(Tuple.from(p)).map(rows -> {
      Row r = rows.iterator().next();
      long[] b = new long[BUCKETS.size() + 1];
      for (int i = 0; i < b.length; i++) b[i] = r.getLong("b" + i);
      return new Summary(r.getLong("valid"), r.getLong("expiring"), r.getLong("expired"), r.getLong("none"), b);
    });
  }

  /** The revoked certificates inside {@code boundary} that have not expired at {@code now}: the partial index of the revoked ones. */
  Future<Long> revokedUnexpired(Boundary boundary, Instant now) {
    List<Object> p = new ArrayList<>();
    p.add(Sql.odt(now));
    String sql = "SELECT count(*) AS n FROM meshca_certificates WHERE revoked_at IS NOT NULL AND not_after > $1"
        + Sql.inScope(boundary.team(), boundary.environment(), p);
    return reads.preparedQuery(sql).execute(Tuple.from(p)).map(rows -> rows.iterator().next().getLong("n"));
  }

  /**
   * Marks the certificate revoked in {@code tx} (its row locked first); the row as it was, or null
   * when there is none in {@code boundary}. The caller appends the change-log entry and then calls
   * {@link #markRevoked} with its seq.
   */
  Future<Cert> lock(SqlClient tx, Boundary boundary, String serial) {
    return tx.preparedQuery("SELECT " + COLUMNS + " FROM meshca_certificates WHERE serial = $3 AND " + Sql.inScope(1, 2) + " FOR UPDATE")
        .execute(Tuple.of(boundary.team(), boundary.environment(), serial))
        .map(rows -> rows.size() == 0 ? null : map(rows.iterator().next(), false));
  }

  /**
   * Takes a key-share lock on node {@code nodeId}'s row in {@code tx} (a deletion waits for it; a flush
   * does not): whether the row exists. The node feature owns the row; this only reads it.
   */
  static Future<Boolean> holdNode(SqlClient tx, String nodeId) {
    return tx.preparedQuery("SELECT 1 FROM nodes WHERE id = $1 FOR KEY SHARE").execute(Tuple.of(nodeId)).map(rows -> rows.size() > 0);
  }

  /** Locks node {@code nodeId}'s unexpired, unrevoked certificates in {@code tx} (serial order); the rows as they were. */
  Future<List<Cert>> lockUnrevoked(SqlClient tx, String nodeId) {
    return tx.preparedQuery("SELECT " + COLUMNS + " FROM meshca_certificates WHERE node_id = $1 AND revoked_at IS NULL AND not_after > now() "
            + "ORDER BY serial FOR UPDATE")
        .execute(Tuple.of(nodeId))
        .map(rows -> Sql.list(rows, r -> map(r, false)));
  }

  /**
   * Locks, in {@code tx} (serial order), the unexpired, unrevoked certificates of {@code nodeIds[i]} that
   * record a WireGuard key other than {@code keys[i]} (null or empty: the node is skipped); the rows as they were.
   */
  Future<List<Cert>> lockOtherKeys(SqlClient tx, String[] nodeIds, String[] keys) {
    return tx.preparedQuery("SELECT " + COLUMNS.replaceAll("(^|, )", "$1c.") + " FROM meshca_certificates c "
            + "JOIN UNNEST($1::text[], $2::text[]) AS u(id, key) ON c.node_id = u.id "
            + "WHERE NULLIF(u.key, '') IS NOT NULL AND c.wireguard_key <> u.key AND c.revoked_at IS NULL AND c.not_after > now() "
            + "ORDER BY c.serial FOR UPDATE OF c")
        .execute(Tuple.tuple().addArrayOfString(nodeIds).addArrayOfString(keys))
        .map(rows -> Sql.list(rows, r -> map(r, false)));
  }

  Future<Void> markRevoked(SqlClient tx, String serial, Instant at, String reason, long seq) {
    return tx.preparedQuery("UPDATE meshca_certificates SET revoked_at = $2, reason = $3, revoked_seq = $4 WHERE serial = $1")
        .execute(Tuple.of(serial, Sql.odt(at), reason, seq)).mapEmpty();
  }

  /**
   * The revocations of certificates that have not expired (the partial index), for the revocation list,
   * each with the seq of its change-log entry ({@code revoked_seq}).
   */
  static Future<List<Revocations.Revoked>> unexpiredRevoked(SqlClient client) {
    return client.query("SELECT " + COLUMNS + ", revoked_seq FROM meshca_certificates WHERE revoked_at IS NOT NULL AND not_after > now() "
        + "ORDER BY not_after, serial").execute().map(rows -> Sql.list(rows, r -> {
          Cert c = map(r, false);
          return new Revocations.Revoked(c.serial(), c.spkiSha256(), c.revokedAt(), c.reason(), c.notAfter(), r.getLong("revoked_seq"));
        }));
  }

  /** The revocation list's version: the greatest seq of a revocation's change-log entry (0: none ever). */
  static Future<Long> revocationVersion(SqlClient client) {
    return client.query("SELECT coalesce(max(revoked_seq), 0) AS v FROM meshca_certificates WHERE revoked_at IS NOT NULL").execute()
        .map(rows -> rows.iterator().next().getLong("v"));
  }

  private static Cert map(Row r, boolean withDer) {
    Buffer der = withDer ? r.getBuffer("certificate") : null;
    return new Cert(r.getString("serial"), r.getString("node_id"), r.getString("team"), r.getString("environment"),
        r.getString("spki_sha256"), r.getString("wireguard_key"), r.getString("issuer"), Sql.instant(r, "not_before"),
        Sql.instant(r, "not_after"), Sql.instant(r, "issued_at"), Sql.instant(r, "revoked_at"), r.getString("reason"),
        der == null ? null : der.getBytes(), r.getArrayOfStrings("hostnames") == null ? null : java.util.List.of(r.getArrayOfStrings("hostnames")));
  }
}
