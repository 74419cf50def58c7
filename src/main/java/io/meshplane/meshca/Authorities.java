package io.meshplane.meshca;

import io.meshplane.common.Blocking;
import io.meshplane.common.Ids;
import io.meshplane.common.Sql;
import io.meshplane.module.StartRefused;
import io.vertx.core.Future;
import io.vertx.core.buffer.Buffer;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.SqlClient;
import io.vertx.sqlclient.Tuple;
import java.io.IOException;
import java.security.KeyPair;
import java.security.PrivateKey;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import org.bouncycastle.cert.X509CertificateHolder;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The CA hierarchy and the one owner of {@code meshca_authorities}: a root and an intermediate that
 * signs node certificates. At the first start of a deployment (under a PostgreSQL advisory lock: one
 * replica creates, the others wait and read) it creates both; every start loads the active ones and
 * opens the intermediate's key with the {@link KeyVault}.
 *
 * <p>Rows carry the phase of a rotation ({@code staged | active | retiring | retired}); only
 * {@code active} rows exist today. Rotation (staging a new intermediate or root, distributing the
 * bundle, issuing from the new CA, retiring the old) will add rows in those states here and change
 * {@link #current} through the same {@link Hierarchy} value; the bundle already lists every root that
 * is active or retiring.
 */
final class Authorities {
  private static final Logger LOG = LoggerFactory.getLogger(Authorities.class);
  /** pg_advisory_xact_lock key of the hierarchy's creation ("meshca" in ASCII). */
  static final long CREATE_LOCK = 0x6d65736863614341L;
  private static final String COLUMNS = "id, kind, parent, state, certificate, sealed_key, not_before, not_after";

  /** One CA: its row, its certificate, and its private key when this replica holds it (null for a root kept outside). */
  record Authority(String id, String kind, String parent, String state, X509CertificateHolder certificate, PrivateKey key) {
    Instant notAfter() {
      return certificate.getNotAfter().toInstant();
    }

    String pem() {
      return Pki.pem(certificate);
    }
  }

  /**
   * What issuance and the bundle read: the intermediate that signs, its chain (the intermediate's PEM,
   * which a node presents after its own certificate), and the trust bundle (the PEM of the roots).
   *
   * @param bundleVersion names the bundle's content (the first 16 hex digits of its SHA-256), an ETag
   */
  record Hierarchy(List<Authority> roots, Authority intermediate, String chainPem, String bundlePem, String bundleVersion) {}

  private final Pool pool;
  private final Duration rootLifetime;
  private final Duration intermediateLifetime;
  private volatile Hierarchy current;

  Authorities(Pool pool, Duration rootLifetime, Duration intermediateLifetime) {
    this.pool = pool;
    this.rootLifetime = rootLifetime;
    this.intermediateLifetime = intermediateLifetime;
  }

  /** The active hierarchy; null before {@link #load}. */
  Hierarchy current() {
    return current;
  }

  /**
   * Creates the hierarchy if this deployment has none (one replica does, under the advisory lock), then
   * loads the active authorities and opens the intermediate's key. Blocking (the start's thread). A
   * key that does not open stops the replica with a message naming {@code meshca.secret}.
   */
  void load(KeyVault vault) {
    // made before the transaction (key generation and signing are not work for a connection's lock);
    // thrown away when another replica created the hierarchy first
    Instant now = Instant.now();
    KeyPair rootPair = Pki.p256();
    String rootId = Ids.next("ca");
    X509CertificateHolder root = Pki.root(rootPair, "MeshCA root " + rootId, now, rootLifetime);
    KeyPair interPair = Pki.p256();
    String interId = Ids.next("ca");
    X509CertificateHolder inter = Pki.intermediate(interPair.getPublic(), "MeshCA intermediate " + interId, root, rootPair.getPrivate(), now,
        intermediateLifetime);
    Boolean created = Blocking.await(pool.withTransaction(tx -> tx.preparedQuery("SELECT pg_advisory_xact_lock($1)").execute(Tuple.of(CREATE_LOCK))
        .compose(v -> tx.query("SELECT count(*) AS n FROM meshca_authorities WHERE state = 'active'").execute())
        .compose(rows -> {
          if (rows.iterator().next().getLong("n") > 0) return Future.succeededFuture(false);
          return insert(tx, rootId, "root", null, root, vault.seal(rootId, rootPair.getPrivate().getEncoded()))
              .compose(v -> insert(tx, interId, "intermediate", rootId, inter, vault.seal(interId, interPair.getPrivate().getEncoded())))
              .map(true);
        })), Duration.ofSeconds(30), "creating the MeshCA hierarchy");
    if (created) LOG.info("MeshCA: created the root {} (until {}) and the intermediate {} (until {})", rootId, root.getNotAfter().toInstant(),
        interId, inter.getNotAfter().toInstant());
    List<Row> rows = Blocking.await(pool.query("SELECT " + COLUMNS + " FROM meshca_authorities WHERE state IN ('active', 'retiring') "
        + "ORDER BY kind, created_at").execute().map(r -> {
          List<Row> out = new java.util.ArrayList<>();
          r.forEach(out::add);
          return out;
        }), Duration.ofSeconds(30), "loading the MeshCA hierarchy");
    current = hierarchy(rows, vault);
    Authority i = current.intermediate();
    LOG.info("MeshCA: issuing from the intermediate {} (until {}); bundle {} ({} root(s))", i.id(), i.notAfter(), current.bundleVersion(),
        current.roots().size());
  }

  private static Hierarchy hierarchy(List<Row> rows, KeyVault vault) {
    List<Authority> roots = new java.util.ArrayList<>();
    Authority intermediate = null;
    for (Row r : rows) {
      String id = r.getString("id");
      String kind = r.getString("kind");
      String state = r.getString("state");
      X509CertificateHolder cert = Pki.certificate(r.getBuffer("certificate").getBytes());
      Buffer sealed = r.getBuffer("sealed_key");
      boolean signs = "intermediate".equals(kind) && "active".equals(state);
      PrivateKey key = null;
      if (signs) {
        if (sealed == null) throw new IllegalStateException("MeshCA: the active intermediate " + id + " has no private key");
        byte[] plain;
        try {
          plain = vault.open(id, sealed.getBytes());
        } catch (KeyVault.WrongSecret e) {
          throw new StartRefused("meshca.secret (env MESH_MESHCA_SECRET, or meshca.secret_file): the MeshCA keys in PostgreSQL do not open "
              + "with this secret (" + e.getMessage() + "); every replica of a deployment needs the secret the keys were sealed with");
        }
        key = Pki.privateKey(plain);
        java.util.Arrays.fill(plain, (byte) 0);
      }
      Authority a = new Authority(id, kind, r.getString("parent"), state, cert, key);
      if ("root".equals(kind)) roots.add(a);
      else if (signs) intermediate = a;
    }
    if (roots.isEmpty() || intermediate == null) throw new IllegalStateException("MeshCA: no active root and intermediate in PostgreSQL");
    StringBuilder bundle = new StringBuilder();
    for (Authority r : roots) bundle.append(r.pem());
    String pem = bundle.toString();
    return new Hierarchy(List.copyOf(roots), intermediate, intermediate.pem(), pem,
        Pki.sha256Hex(pem.getBytes(java.nio.charset.StandardCharsets.US_ASCII)).substring(0, 16));
  }

  private static Future<Void> insert(SqlClient tx, String id, String kind, String parent, X509CertificateHolder cert, byte[] sealed) {
    byte[] der;
    try {
      der = cert.getEncoded();
    } catch (IOException e) {
      return Future.failedFuture(e);
    }
    return tx.preparedQuery("INSERT INTO meshca_authorities (" + COLUMNS + ") VALUES ($1, $2, $3, 'active', $4, $5, $6, $7)")
        .execute(Tuple.from(new Object[] {id, kind, parent, Buffer.buffer(der), Buffer.buffer(sealed),
            Sql.odt(cert.getNotBefore().toInstant()), Sql.odt(cert.getNotAfter().toInstant())}))
        .mapEmpty();
  }

  /** How many CA rows {@link #all} reads at most: years of rotations; the retired ones, oldest first, are what is left out beyond. */
  static final int LISTED = 64;

  /**
   * The CA certificates of every row ({@code GET /meshca/authorities}), without keys: the ones in use
   * (staged, active, retiring) first, then the retired ones, roots before intermediates, newest first;
   * at most {@link #LISTED}. Read on {@code client} (the read pool); the few DER certificates are parsed
   * on the caller's thread.
   */
  static Future<List<Authority>> all(SqlClient client) {
    return client.preparedQuery("SELECT id, kind, parent, state, certificate FROM meshca_authorities "
            + "ORDER BY state = 'retired', kind DESC, created_at DESC, id LIMIT $1")
        .execute(Tuple.of(LISTED))
        .map(rows -> Sql.list(rows, r -> new Authority(r.getString("id"), r.getString("kind"), r.getString("parent"), r.getString("state"),
            Pki.certificate(r.getBuffer("certificate").getBytes()), null)));
  }
}
