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
import io.meshplane.changes.ChangeLog;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.util.Base64;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
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
 * The CA hierarchy and the one owner of {@code meshca_authorities}: the roots nodes trust and the
 * intermediate that signs node certificates. At the first start of a deployment (under a PostgreSQL
 * advisory lock: one replica creates, the others wait and read) it creates a root and an intermediate;
 * every start loads the rows and opens the signing intermediate's key with the {@link KeyVault}.
 *
 * <p>A row's state is its part in a rotation ({@link Rotations}): {@code staged} (made, neither trusted
 * nor signing), {@code active} (a root: in the bundle; the one active intermediate: signing),
 * {@code retiring} (a root still in the bundle; an intermediate no longer signing), {@code retired}.
 * Every change of state is a {@code pki} change-log entry ({@code op: hierarchy}) carrying the rows that
 * are not retired, so every replica switches to the same {@link Hierarchy} in the log's order, without
 * a read of its own: this class follows the log.
 */
final class Authorities implements ChangeLog.Follower {
  private static final Logger LOG = LoggerFactory.getLogger(Authorities.class);
  /** pg_advisory_xact_lock key of the hierarchy's creation and of every rotation step ("meshcaCA" in ASCII). */
  static final long CREATE_LOCK = 0x6d65736863614341L;
  private static final String COLUMNS = "id, kind, parent, state, certificate, sealed_key, not_before, not_after";
  /** The change-log {@code pki} entry's {@code op} for a new state of the hierarchy. */
  static final String OP = "hierarchy";

  /**
   * One CA: its row, its certificate, its cross-signed certificate (a rotation's new root, signed by the
   * old root; else null), and its private key when this replica opened it (the signing intermediate).
   */
  record Authority(String id, String kind, String parent, String state, X509CertificateHolder certificate, X509CertificateHolder crossSigned,
      PrivateKey key) {
    Instant notAfter() {
      return certificate.getNotAfter().toInstant();
    }

    String pem() {
      return Pki.pem(certificate);
    }

    /** Whether nodes trust it (a root in the bundle). */
    boolean trusted() {
      return "root".equals(kind) && ("active".equals(state) || "retiring".equals(state));
    }
  }

  /**
   * What issuance and the bundle read: the intermediate that signs, its chain (what a node presents
   * after its own certificate: the intermediate, and during a root rotation the new root cross-signed
   * by the old one), the trust bundle (the PEM of the roots in it), and every authority not retired.
   *
   * @param bundleVersion names the bundle's content (the first 16 hex digits of its SHA-256), an ETag
   */
  record Hierarchy(List<Authority> roots, Authority intermediate, String chainPem, String bundlePem, String bundleVersion,
      List<Authority> all) {
    Authority byId(String id) {
      for (Authority a : all) if (a.id().equals(id)) return a;
      return null;
    }
  }

  /** A row as stored, or as a {@code hierarchy} entry carries it. */
  record Stored(String id, String kind, String parent, String state, byte[] certificate, byte[] crossSigned, byte[] sealedKey) {
    JsonObject json() {
      Base64.Encoder b = Base64.getEncoder();
      return new JsonObject().put("id", id).put("kind", kind).put("parent", parent).put("state", state).put("certificate", b.encodeToString(certificate))
          .put("cross_signed", crossSigned == null ? null : b.encodeToString(crossSigned))
          .put("sealed_key", sealedKey == null ? null : b.encodeToString(sealedKey));
    }

    static Stored of(JsonObject j) {
      Base64.Decoder b = Base64.getDecoder();
      return new Stored(j.getString("id"), j.getString("kind"), j.getString("parent"), j.getString("state"), b.decode(j.getString("certificate")),
          j.getString("cross_signed") == null ? null : b.decode(j.getString("cross_signed")),
          j.getString("sealed_key") == null ? null : b.decode(j.getString("sealed_key")));
    }

    static Stored of(Row r) {
      Buffer cross = r.getBuffer("cross_signed");
      Buffer sealed = r.getBuffer("sealed_key");
      return new Stored(r.getString("id"), r.getString("kind"), r.getString("parent"), r.getString("state"), r.getBuffer("certificate").getBytes(),
          cross == null ? null : cross.getBytes(), sealed == null ? null : sealed.getBytes());
    }
  }

  private final Pool pool;
  private final Duration rootLifetime;
  private final Duration intermediateLifetime;
  private volatile Hierarchy current;
  private volatile KeyVault vault;
  /** Keys this replica opened, by authority id (an id's key never changes). */
  private final Map<String, PrivateKey> keys = new ConcurrentHashMap<>();
  private final List<Runnable> listeners = new java.util.concurrent.CopyOnWriteArrayList<>();

  Authorities(Pool pool, Duration rootLifetime, Duration intermediateLifetime) {
    this.pool = pool;
    this.rootLifetime = rootLifetime;
    this.intermediateLifetime = intermediateLifetime;
  }

  /** The hierarchy; null before {@link #load}. */
  Hierarchy current() {
    return current;
  }

  /** Called (on the feed's thread) after each new hierarchy. */
  void onChange(Runnable r) {
    listeners.add(r);
  }

  KeyVault vault() {
    return vault;
  }

  Duration intermediateLifetime() {
    return intermediateLifetime;
  }

  Duration rootLifetime() {
    return rootLifetime;
  }

  /**
   * Creates the hierarchy if this deployment has none (one replica does, under the advisory lock), then
   * loads the authorities and opens the signing intermediate's key. Blocking (the start's thread). A
   * key that does not open stops the replica with a message naming {@code meshca.secret}.
   */
  void load(KeyVault vault) {
    this.vault = vault;
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
          return insert(tx, rootId, "root", null, "active", root, vault.seal(rootId, rootPair.getPrivate().getEncoded()), null)
              .compose(v -> insert(tx, interId, "intermediate", rootId, "active", inter, vault.seal(interId, interPair.getPrivate().getEncoded()), null))
              .map(true);
        })), Duration.ofSeconds(30), "creating the MeshCA hierarchy");
    if (created) LOG.info("MeshCA: created the root {} (until {}) and the intermediate {} (until {})", rootId, root.getNotAfter().toInstant(),
        interId, inter.getNotAfter().toInstant());
    List<Stored> rows = Blocking.await(stored(pool), Duration.ofSeconds(30), "loading the MeshCA hierarchy");
    try {
      install(hierarchy(rows));
    } catch (KeyVault.WrongSecret e) {
      throw new StartRefused("meshca.secret (env MESH_MESHCA_SECRET, or meshca.secret_file): the MeshCA keys in PostgreSQL do not open "
          + "with this secret (" + e.getMessage() + "); every replica of a deployment needs the secret the keys were sealed with");
    }
    Authority i = current.intermediate();
    LOG.info("MeshCA: issuing from the intermediate {} (until {}); bundle {} ({} root(s))", i.id(), i.notAfter(), current.bundleVersion(),
        current.roots().size());
  }

  /** The rows that are not retired, oldest first. */
  static Future<List<Stored>> stored(SqlClient client) {
    return client.query("SELECT id, kind, parent, state, certificate, cross_signed, sealed_key FROM meshca_authorities "
        + "WHERE state <> 'retired' ORDER BY created_at, id").execute().map(r -> {
          List<Stored> out = new java.util.ArrayList<>();
          r.forEach(row -> out.add(Stored.of(row)));
          return out;
        });
  }

  // ---- the change log ----

  @Override
  public boolean apply(ChangeLog.Entry entry) {
    if (!Revocations.KIND.equals(entry.kind()) || !OP.equals(entry.data().getString("op"))) return false;
    if (vault == null) return true; // before the start's load, which reads the rows itself
    List<Stored> rows = new java.util.ArrayList<>();
    for (Object o : entry.data().getJsonArray("rows")) rows.add(Stored.of((JsonObject) o));
    try {
      install(hierarchy(rows));
      LOG.info("MeshCA: hierarchy at change {} ({}): issuing from {}, bundle {}", entry.seq(), entry.data().getString("phase"),
          current.intermediate().id(), current.bundleVersion());
    } catch (RuntimeException | KeyVault.WrongSecret e) {
      LOG.error("MeshCA: the hierarchy of change {} cannot be installed ({}); this replica keeps issuing from {}", entry.seq(), e.getMessage(),
          current == null ? "none" : current.intermediate().id());
    }
    return true;
  }

  @Override
  public Future<Void> load(SqlClient snapshot, long seq) {
    if (vault == null) return Future.succeededFuture();
    return stored(snapshot).map(rows -> {
      try {
        install(hierarchy(rows));
      } catch (KeyVault.WrongSecret e) {
        throw new IllegalStateException("MeshCA: the keys do not open with this secret: " + e.getMessage());
      }
      return null;
    });
  }

  private void install(Hierarchy h) {
    current = h;
    for (Runnable r : listeners) r.run();
  }

  /** The private key of a stored authority (opened once per id), or null when it has none here (a root kept outside). */
  PrivateKey key(Stored s) throws KeyVault.WrongSecret {
    if (s.sealedKey() == null) return null;
    PrivateKey k = keys.get(s.id());
    if (k != null) return k;
    byte[] plain = vault.open(s.id(), s.sealedKey());
    k = Pki.privateKey(plain);
    java.util.Arrays.fill(plain, (byte) 0);
    keys.put(s.id(), k);
    return k;
  }

  private Hierarchy hierarchy(List<Stored> rows) throws KeyVault.WrongSecret {
    List<Authority> all = new java.util.ArrayList<>();
    List<Authority> roots = new java.util.ArrayList<>();
    Authority intermediate = null;
    for (Stored r : rows) {
      boolean signs = "intermediate".equals(r.kind()) && "active".equals(r.state());
      if (signs && r.sealedKey() == null) throw new IllegalStateException("MeshCA: the active intermediate " + r.id() + " has no private key");
      Authority a = new Authority(r.id(), r.kind(), r.parent(), r.state(), Pki.certificate(r.certificate()),
          r.crossSigned() == null ? null : Pki.certificate(r.crossSigned()), signs ? key(r) : null);
      all.add(a);
      if (a.trusted()) roots.add(a);
      else if (signs) intermediate = a;
    }
    if (roots.isEmpty() || intermediate == null) throw new IllegalStateException("MeshCA: no trusted root and signing intermediate in PostgreSQL");
    StringBuilder bundle = new StringBuilder();
    for (Authority r : roots) bundle.append(r.pem());
    String pem = bundle.toString();
    String chain = intermediate.pem();
    for (Authority a : all) {
      // the signing intermediate's root, cross-signed by the old root while that is valid: peers that trust only the old root verify it
      if (a.id().equals(intermediate.parent()) && a.crossSigned() != null && a.crossSigned().getNotAfter().toInstant().isAfter(Instant.now())) {
        chain += Pki.pem(a.crossSigned());
      }
    }
    return new Hierarchy(List.copyOf(roots), intermediate, chain, pem,
        Pki.sha256Hex(pem.getBytes(java.nio.charset.StandardCharsets.US_ASCII)).substring(0, 16), List.copyOf(all));
  }

  // ---- what a rotation's steps write (Rotations, in its transaction) ----

  static Future<Void> insert(SqlClient tx, String id, String kind, String parent, String state, X509CertificateHolder cert, byte[] sealed,
      X509CertificateHolder crossSigned) {
    byte[] der;
    byte[] cross;
    try {
      der = cert.getEncoded();
      cross = crossSigned == null ? null : crossSigned.getEncoded();
    } catch (IOException e) {
      return Future.failedFuture(e);
    }
    return tx.preparedQuery("INSERT INTO meshca_authorities (" + COLUMNS + ", cross_signed) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)")
        .execute(Tuple.from(new Object[] {id, kind, parent, state, Buffer.buffer(der), sealed == null ? null : Buffer.buffer(sealed),
            Sql.odt(cert.getNotBefore().toInstant()), Sql.odt(cert.getNotAfter().toInstant()), cross == null ? null : Buffer.buffer(cross)}))
        .mapEmpty();
  }

  /** Sets the states of authorities ({@code id → state}) in one statement. */
  static Future<Void> states(SqlClient tx, Map<String, String> states) {
    if (states.isEmpty()) return Future.succeededFuture();
    return tx.preparedQuery("UPDATE meshca_authorities a SET state = u.state FROM UNNEST($1::text[], $2::text[]) AS u(id, state) WHERE a.id = u.id")
        .execute(Tuple.tuple().addArrayOfString(states.keySet().toArray(new String[0])).addArrayOfString(states.values().toArray(new String[0])))
        .mapEmpty();
  }

  /** The {@code hierarchy} entry's data after a step: the rows not retired, as they are now in {@code tx}. */
  static Future<JsonObject> entry(SqlClient tx, String rotation, String phase) {
    return stored(tx).map(rows -> {
      JsonArray a = new JsonArray();
      // a root's sealed key stays in its row (a rotation's start reads it there); replicas open only the intermediates'
      for (Stored s : rows) a.add("root".equals(s.kind()) ? new Stored(s.id(), s.kind(), s.parent(), s.state(), s.certificate(), s.crossSigned(),
          null).json() : s.json());
      return new JsonObject().put("op", OP).put("rotation", rotation).put("phase", phase).put("rows", a);
    });
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
            Pki.certificate(r.getBuffer("certificate").getBytes()), null, null)));
  }
}
