package io.meshplane.backup;

import static io.meshplane.backup.SnapshotFixture.assertNothingChanged;
import static io.meshplane.backup.SnapshotFixture.assertRestored;
import static io.meshplane.backup.SnapshotFixture.cli;
import static io.meshplane.backup.SnapshotFixture.copy;
import static io.meshplane.backup.SnapshotFixture.inProcess;
import static io.meshplane.backup.SnapshotFixture.resign;
import static io.meshplane.backup.SnapshotFixture.set;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.meshplane.app.Meshplane;
import io.meshplane.backup.SnapshotFixture.Result;
import io.meshplane.backup.SnapshotFixture.Target;
import io.meshplane.testing.Await;
import io.meshplane.testing.Http;
import io.meshplane.testing.Nodes;
import io.meshplane.testing.TestCluster;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.client.HttpResponse;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Snapshots (OPERATIONS "Backups and snapshots"): {@code meshplane snapshot export} of a running
 * deployment, signed with a key kept outside the snapshot; {@code restore} into a new database owned by a
 * role that is no superuser and a new keys folder; a new replica on it, and everything a user relies on is
 * back. A restore is whole or nothing: every way a snapshot can be wrong (its keys, its signature, its dump,
 * an archive that would run code on the server) is refused with the target left exactly as empty as it
 * was, a failure after the load is undone, and a correct retry then succeeds.
 */
@Timeout(300)
class SnapshotTest {
  /** MeshCA's secret of the source deployment, which a replica on the restored database needs too. */
  static final String MESHCA_SECRET = "the snapshot test's MeshCA secret, 32+ bytes";

  @TempDir static Path shared;
  static Path signingKey;
  static Path verifyKey;
  /** The snapshot of a running deployment: 3 enrolled nodes with flushed heartbeats, 2 policy versions. */
  static Path snap;
  static String admin;
  static final List<Nodes.Enrolled> FLEET = new ArrayList<>();
  static final Map<String, JsonObject> BEFORE = new HashMap<>();
  static long aclVersion;

  @TempDir Path dir;
  final SnapshotFixture fx = new SnapshotFixture();

  @BeforeAll
  static void exportARunningDeployment() throws Exception {
    signingKey = shared.resolve("snapshot-signing.key");
    verifyKey = shared.resolve("snapshot-signing.pub");
    Result keygen = inProcess(Map.of(), "keygen", "--private-key", signingKey.toString(), "--public-key", verifyKey.toString());
    assertEquals(0, keygen.code(), keygen.output());
    snap = shared.resolve("snap");
    try (TestCluster source = TestCluster.of(1)) {
      Http http = source.http();
      Meshplane a = source.start(0, Map.of("writebehind.flush_interval", "200ms", "meshca.secret", MESHCA_SECRET));
      admin = source.admin();
      for (int i = 0; i < 3; i++) FLEET.add(Nodes.enroll(http, a.coordinatorPort(), admin, "snap-" + i, "snap", "prod"));
      for (int i = 0; i < FLEET.size(); i++) beat(http, a.coordinatorPort(), FLEET.get(i), i);
      JsonObject policy = new JsonObject().put("grants", new JsonArray().add(new JsonObject().put("src", new JsonArray().add("tag:test"))
          .put("dst", new JsonArray().add("tag:test")).put("ports", new JsonArray().add("tcp/22"))));
      for (int v = 0; v < 2; v++) {
        HttpResponse<Buffer> r = http.send(HttpMethod.PUT, a.coordinatorPort(), "/v1/acl?team=snap&environment=prod", admin, policy);
        assertEquals(200, r.statusCode(), r.bodyAsString());
      }
      aclVersion = acl(http, a.coordinatorPort(), admin).getLong("version");
      // the write-behind has the heartbeats in PostgreSQL
      Await.until("the heartbeats reached PostgreSQL", 20_000,
          () -> SnapshotFixture.number(source.db().name(), "SELECT count(*) FROM nodes WHERE team = 'snap' AND heartbeat_at IS NOT NULL"),
          n -> n >= FLEET.size());
      for (Object o : nodes(http, a.coordinatorPort(), admin)) BEFORE.put(((JsonObject) o).getString("id"), (JsonObject) o);
      // the real command line, while the replica runs
      Result export = cli(shared, Map.of("MESH_PG_URL", source.db().url(), "MESH_KEYS_DIR", source.replicas().keysDir().toString(),
          SnapshotCommand.SIGNING_KEY_ENV, signingKey.toString()), "export", snap.toString());
      assertEquals(0, export.code(), export.output());
    }
  }

  @AfterEach
  void dropTargets() throws Exception {
    fx.close();
  }

  @Test
  void aSnapshotRestoresTheControlPlaneIntoANewDatabaseAndEveryCredentialStillWorks() throws Exception {
    String manifest = Files.readString(snap.resolve("manifest.txt"));
    assertTrue(manifest.contains("nodes=3\n") && manifest.contains("policy_versions=2\n")
        && manifest.contains("schema_version=" + SnapshotFixture.latestSchema() + "\n"), manifest);
    assertEquals(Set.of(PosixFilePermission.OWNER_READ, PosixFilePermission.OWNER_WRITE, PosixFilePermission.OWNER_EXECUTE),
        Files.getPosixFilePermissions(snap.resolve("keys")), "the snapshot's keys are a secret");
    try (var files = Files.walk(snap)) {
      for (Path f : files.filter(Files::isRegularFile).toList()) {
        assertEquals(Set.of(PosixFilePermission.OWNER_READ, PosixFilePermission.OWNER_WRITE), Files.getPosixFilePermissions(f), f.toString());
      }
    }
    Result again = inProcess(Map.of("MESH_PG_URL", "postgresql://postgres@127.0.0.1:1/none", SnapshotCommand.SIGNING_KEY_ENV,
        signingKey.toString()), "export", snap.toString());
    assertEquals(2, again.code(), "an export never writes into an existing folder: " + again.output());
    Result unsigned = inProcess(Map.of("MESH_PG_URL", "postgresql://postgres@127.0.0.1:1/none"), "export", dir.resolve("x").toString());
    assertEquals(2, unsigned.code(), "an export without the signing key is refused: " + unsigned.output());
    assertTrue(unsigned.output().contains("--signing-key"), unsigned.output());

    Target t = fx.target(dir);
    Map<String, String> env = t.env(verifyKey);
    // a damaged dump is refused before anything is written
    Path damaged = copy(snap, dir.resolve("damaged"));
    byte[] dump = Files.readAllBytes(damaged.resolve("meshplane.dump"));
    dump[dump.length / 2] ^= 1;
    Files.write(damaged.resolve("meshplane.dump"), dump);
    Result refused = cli(dir, env, "restore", damaged.toString());
    assertEquals(2, refused.code(), refused.output());
    assertTrue(refused.output().contains("meshplane.dump does not match its SHA-256"), refused.output());
    assertNothingChanged(t, refused);

    Result restore = cli(dir, env, "restore", snap.toString());
    assertRestored(t, restore, snap);
    Result overwrite = inProcess(SnapshotFixture.with(env, "MESH_KEYS_DIR", dir.resolve("other-keys").toString()), "restore", snap.toString());
    assertEquals(2, overwrite.code(), "a restore never writes over a database that holds tables: " + overwrite.output());
    assertTrue(overwrite.output().contains("is not empty"), overwrite.output());

    try (TestCluster target = TestCluster.of(1)) {
      Http http = target.http();
      // the replica runs as the restored database's owner, a role that is no superuser
      // MeshCA's secret is not in a snapshot (OPERATIONS.md, "MeshCA": kept with the backups): the operator gives it again
      Meshplane b = target.start(0, t.url(), Map.of("auth.keys_dir", t.keys().toString(), "meshca.secret", MESHCA_SECRET));
      JsonArray items = nodes(http, b.coordinatorPort(), admin);
      assertEquals(BEFORE.size(), items.size(), items.encodePrettily());
      for (Object o : items) {
        JsonObject n = (JsonObject) o;
        JsonObject was = BEFORE.get(n.getString("id"));
        assertEquals(was.getString("address"), n.getString("address"));
        assertEquals(was.getString("heartbeat"), n.getString("heartbeat"), "the last flushed heartbeat is restored");
        assertEquals(was.getJsonArray("tags"), n.getJsonArray("tags"));
      }
      assertEquals(aclVersion, acl(http, b.coordinatorPort(), admin).getLong("version"));
      JsonObject history = http.get(b.coordinatorPort(), "/v1/acl/versions?team=snap&environment=prod", admin).bodyAsJsonObject();
      assertEquals(2, history.getJsonArray("items").size(), history.encodePrettily());
      JsonArray enrolled = http.get(b.coordinatorPort(), "/v1/audit?action=node.enroll&limit=100", admin).bodyAsJsonObject().getJsonArray("items");
      assertEquals(FLEET.size(), enrolled.size(), "the audit trail is restored");
      for (int i = 0; i < FLEET.size(); i++) beat(http, b.coordinatorPort(), FLEET.get(i), 100 + i);
      // the address sequence is restored: a new node gets a new address
      Nodes.Enrolled fresh = Nodes.enroll(http, b.coordinatorPort(), admin, "snap-new", "snap", "prod");
      for (JsonObject was : BEFORE.values()) assertFalse(was.getString("address").equals(fresh.node().getString("address")), "address reused");
    }
  }

  private record Refusal(Target target, Result result) {}

  /**
   * Restores {@code bad} into a new target: refused (exit 2) with {@code expected} in the message and
   * nothing changed; then {@link #snap} into the same target succeeds.
   */
  private Refusal refusedThenRetryWorks(Path bad, String expected) throws Exception {
    Target t = fx.target(dir);
    Result r = inProcess(t.env(verifyKey), "restore", bad.toString());
    System.out.println("refused as expected: " + r.output().strip());
    assertEquals(2, r.code(), r.output());
    assertTrue(r.output().contains(expected), "the message names what is wrong (" + expected + "): " + r.output());
    assertNothingChanged(t, r);
    assertRestored(t, inProcess(t.env(verifyKey), "restore", snap.toString()), snap);
    return new Refusal(t, r);
  }

  private static String keyName(String kind) throws IOException {
    try (var keys = Files.list(snap.resolve("keys"))) {
      return keys.map(p -> p.getFileName().toString()).filter(n -> n.endsWith("." + kind + ".pem")).sorted().findFirst().orElseThrow();
    }
  }

  @Test
  void anEmptyKeysFolderIsRefusedBeforeAnythingChanges() throws Exception {
    Path bad = copy(snap, dir.resolve("empty-keys"));
    try (var keys = Files.list(bad.resolve("keys"))) {
      for (Path k : keys.toList()) Files.delete(k);
    }
    // signed again by the key's holder, so that only the empty folder is wrong
    resign(bad, signingKey, m -> m.replaceAll("(?m)^key=.*\n", ""));
    refusedThenRetryWorks(bad, "holds no signing key pair");
  }

  @Test
  void aSubFolderInKeysIsRefused() throws Exception {
    Path bad = copy(snap, dir.resolve("sub-folder"));
    Files.createDirectory(bad.resolve("keys").resolve("old"));
    refusedThenRetryWorks(bad, "keys/old is a folder");
  }

  @Test
  void aDanglingSymlinkInKeysIsRefused() throws Exception {
    Path bad = copy(snap, dir.resolve("dangling"));
    Files.createSymbolicLink(bad.resolve("keys").resolve("k20990101000000abcd.public.pem"), dir.resolve("nothing-here"));
    refusedThenRetryWorks(bad, "keys/k20990101000000abcd.public.pem is a symbolic link that points nowhere");
  }

  @Test
  void aSymlinkToAFileOutsideIsRefusedEvenWithTheListedContent() throws Exception {
    Path bad = copy(snap, dir.resolve("link-out"));
    String name = keyName("public");
    Path outside = Files.copy(snap.resolve("keys").resolve(name), dir.resolve("outside.pem"));
    Files.delete(bad.resolve("keys").resolve(name));
    Files.createSymbolicLink(bad.resolve("keys").resolve(name), outside);
    // the link's target has exactly the bytes the manifest lists: only reading without following links refuses it
    refusedThenRetryWorks(bad, "keys/" + name + " is a symbolic link (to " + outside + ")");
  }

  @Test
  void anUnsignedSnapshotIsRefused() throws Exception {
    Path bad = copy(snap, dir.resolve("unsigned"));
    Files.delete(bad.resolve("manifest.sig"));
    refusedThenRetryWorks(bad, "is not signed (no manifest.sig)");
  }

  @Test
  void aSnapshotSignedByAnotherKeyIsRefused() throws Exception {
    Path otherKey = dir.resolve("other.key");
    assertEquals(0, inProcess(Map.of(), "keygen", "--private-key", otherKey.toString(), "--public-key", dir.resolve("other.pub").toString()).code());
    Path bad = copy(snap, dir.resolve("other-signer"));
    resign(bad, otherKey, m -> m);
    refusedThenRetryWorks(bad, "manifest.sig does not verify with " + verifyKey);
  }

  @Test
  void aTamperedDumpWithARecomputedHashButTheOldSignatureIsRefused() throws Exception {
    Path bad = copy(snap, dir.resolve("tampered"));
    byte[] dump = Files.readAllBytes(bad.resolve("meshplane.dump"));
    dump[dump.length - 40] ^= 1;
    Files.write(bad.resolve("meshplane.dump"), dump);
    Path manifest = bad.resolve("manifest.txt");
    Files.writeString(manifest, set("dump_sha256", SnapshotFixture.sha256(bad.resolve("meshplane.dump"))).apply(Files.readString(manifest)));
    refusedThenRetryWorks(bad, "manifest.sig does not verify");
  }

  @Test
  void aSignedDumpOfAnUnrelatedDatabaseIsRefusedNamingItsTable() throws Exception {
    String other = fx.scratchDatabase();
    SnapshotFixture.sql(other, "CREATE TABLE customers (id integer PRIMARY KEY, name text NOT NULL)", "INSERT INTO customers VALUES (1, 'acme')");
    Path bad = copy(snap, dir.resolve("unrelated"));
    Files.delete(bad.resolve("meshplane.dump"));
    SnapshotFixture.pgDump(other, bad.resolve("meshplane.dump"));
    // validly signed by the right key: only the schema check stands between this dump and the database
    resign(bad, signingKey, set("dump_sha256", SnapshotFixture.sha256(bad.resolve("meshplane.dump"))));
    refusedThenRetryWorks(bad, "TABLE public.customers");
  }

  @Test
  void anArchiveWithAFunctionThatRunsAProgramIsRefusedAndNothingOfItRuns() throws Exception {
    // a real Meshplane database (the snapshot restored) with a function that runs a program in any other
    // database, and a CHECK constraint calling it on every row of mesh_meta
    Target source = fx.target(dir);
    assertRestored(source, inProcess(source.env(verifyKey), "restore", snap.toString()), snap);
    Path proof = Path.of("/tmp", "meshplane-snapshot-pwned-" + Long.toHexString(ThreadLocalRandom.current().nextLong() & Long.MAX_VALUE));
    try {
      SnapshotFixture.sql(source.db(),
          "CREATE FUNCTION public.pwn() RETURNS boolean LANGUAGE plpgsql AS $f$ BEGIN IF current_database() <> '" + source.db() + "' THEN"
              + " EXECUTE 'COPY (SELECT 1) TO PROGRAM ''touch " + proof + "'''; END IF; RETURN true; END $f$",
          "ALTER TABLE public.mesh_meta ADD CONSTRAINT pwn CHECK (public.pwn())");
      Path bad = dir.resolve("hostile");
      // exported and signed with the right key, as by an insider holding it or a compromised source database
      Result export = inProcess(Map.of("MESH_PG_URL", source.url(), "MESH_KEYS_DIR", source.keys().toString(),
          SnapshotCommand.SIGNING_KEY_ENV, signingKey.toString()), "export", bad.toString());
      assertEquals(0, export.code(), export.output());
      // the archive is hostile: a plain pg_restore as a superuser (what the former bash restore did) runs the program
      String scratch = fx.scratchDatabase();
      SnapshotFixture.sql(scratch, "DROP SCHEMA public"); // the dump of schema public makes it
      Process plain = new ProcessBuilder("pg_restore", "--no-owner", "--no-privileges", "--single-transaction", "--exit-on-error",
          "--dbname=postgresql://postgres@127.0.0.1:5432/" + scratch, bad.resolve("meshplane.dump").toString()).redirectErrorStream(true).start();
      String said = new String(plain.getInputStream().readAllBytes());
      assertTrue(plain.waitFor(60, TimeUnit.SECONDS));
      assertEquals(0, plain.exitValue(), said);
      assertTrue(Files.exists(proof), "the fixture is hostile: pg_restore ran the program");
      Files.delete(proof);

      Refusal r = refusedThenRetryWorks(bad, "FUNCTION public.pwn()");
      assertFalse(Files.exists(proof), "the restore never ran the archive's program: " + r.result().output());
      String db = r.target().db();
      assertEquals(0, SnapshotFixture.number(db, "SELECT count(*) FROM pg_proc WHERE proname = 'pwn'"), "the function was never made");
      assertEquals(0, SnapshotFixture.number(db, "SELECT count(*) FROM pg_constraint WHERE conname = 'pwn'"), "nor the constraint");
    } finally {
      Files.deleteIfExists(proof);
    }
  }

  @Test
  void aSuperuserRestoreUrlIsRefusedWithHowToMakeAnOwnerRole() throws Exception {
    Target t = fx.target(dir);
    String superuserUrl = "postgresql://postgres@127.0.0.1:5432/" + t.db();
    Result r = inProcess(SnapshotFixture.with(t.env(verifyKey), "MESH_PG_URL", superuserUrl), "restore", snap.toString());
    assertEquals(2, r.code(), r.output());
    assertTrue(r.output().contains("postgres is a superuser") && r.output().contains("CREATE ROLE") && r.output().contains("OWNER"), r.output());
    assertNothingChanged(t, r);
    // a role that may become a superuser, or run programs on the server, is refused alike
    SnapshotFixture.sql("postgres", "GRANT pg_execute_server_program TO " + t.role());
    Result member = inProcess(t.env(verifyKey), "restore", snap.toString());
    assertEquals(2, member.code(), member.output());
    assertTrue(member.output().contains("is a member of pg_execute_server_program"), member.output());
    assertNothingChanged(t, member);
    SnapshotFixture.sql("postgres", "REVOKE pg_execute_server_program FROM " + t.role());
    // an existing empty keys folder is a valid target too: the staged folder takes its place
    Files.createDirectory(t.keys());
    assertRestored(t, inProcess(t.env(verifyKey), "restore", snap.toString()), snap);
  }

  @Test
  void aFailureAfterTheDataLoadEmptiesTheDatabaseAgainAndARetryWorks() throws Exception {
    Target t = fx.target(dir);
    // the last step, moving the staged keys into place after the commit, fails
    Result r = inProcess(t.env(verifyKey), (staging, target) -> {
      try {
        assertEquals(3, SnapshotFixture.number(t.db(), "SELECT count(*) FROM public.nodes"), "the data is committed before the keys move");
      } catch (java.sql.SQLException e) {
        throw new AssertionError(e);
      }
      assertTrue(Files.isDirectory(staging), "the keys are staged");
      throw new IOException("injected: the keys' target is not writable");
    }, "restore", snap.toString());
    assertEquals(1, r.code(), r.output());
    assertTrue(r.output().contains("the keys could not be moved into " + t.keys()) && r.output().contains("undone"), r.output());
    assertNothingChanged(t, r);
    assertRestored(t, inProcess(t.env(verifyKey), "restore", snap.toString()), snap);
  }

  @Test
  void countsThatDisagreeWithTheLoadedDataAreRefusedAndTheLoadIsUndone() throws Exception {
    Path bad = copy(snap, dir.resolve("counts"));
    resign(bad, signingKey, set("nodes", "99"));
    refusedThenRetryWorks(bad, "the dump holds 3 rows of nodes, its manifest says 99");
  }

  @Test
  void aSnapshotOfANewerSchemaThanTheJarKnowsIsRefused() throws Exception {
    Path bad = copy(snap, dir.resolve("newer"));
    resign(bad, signingKey, set("schema_version", "99"));
    refusedThenRetryWorks(bad, "schema version 99 is newer than this jar's (" + SnapshotFixture.latestSchema() + ")");
  }

  @Test
  void theDataTextMayHoldNothingButSettingsCopyBlocksAndSetval() throws Exception {
    Path ok = dir.resolve("ok.sql");
    String head = "--\n-- PostgreSQL database dump\n--\n\n\\restrict abc123\n\nSET client_encoding = 'UTF8';\n"
        + "SELECT pg_catalog.set_config('search_path', '', false);\n\n";
    String copyBlock = "COPY public.mesh_clock (id, seq) FROM stdin;\nt\t0\nCREATE FUNCTION x() -- only data inside a block\n\\.\n";
    String tail = "SELECT pg_catalog.setval('public.node_address_seq', 4, true);\n\n\\unrestrict abc123\n";
    Files.writeString(ok, head + copyBlock + tail);
    assertEquals(2, DataScript.checkForm(ok).rows().values().iterator().next(), "rows inside a COPY block are data, counted, never run");
    for (String injected : List.of("SELECT public.pwn();", "CREATE FUNCTION public.pwn() RETURNS int LANGUAGE sql AS 'SELECT 1';",
        "COPY public.mesh_clock (id, seq) FROM stdin; SELECT 1;", "COPY public.mesh_clock (id, seq) FROM PROGRAM 'touch /tmp/x';",
        "SET session_replication_role = replica;", "\\! touch /tmp/x", "RESET ROLE;",
        "SELECT pg_catalog.setval('public.node_address_seq', 4, true); SELECT 1;")) {
      Path bad = dir.resolve("bad.sql");
      Files.writeString(bad, head + injected + "\n" + copyBlock + tail);
      Refused e = assertThrows(Refused.class, () -> DataScript.checkForm(bad), injected);
      assertTrue(e.getMessage().contains("line 10, holds what a restore never runs"), e.getMessage());
    }
    Path cut = dir.resolve("cut.sql");
    Files.writeString(cut, head + "COPY public.mesh_clock (id, seq) FROM stdin;\nt\t0\n");
    assertTrue(assertThrows(Refused.class, () -> DataScript.checkForm(cut)).getMessage().contains("ends inside a COPY block"));
    Path after = dir.resolve("after.sql");
    Files.writeString(after, head + copyBlock + tail + "SELECT 1;\n");
    assertTrue(assertThrows(Refused.class, () -> DataScript.checkForm(after)).getMessage().contains("after its unrestrict line"));
  }

  @Test
  void theUrlsPasswordNeverReachesACommandLine() {
    for (String url : List.of("postgresql://owner:s%40cret@db.internal:5433/mesh?sslmode=require",
        "postgresql://owner@db.internal:5433/mesh?password=s%40cret&sslmode=require")) {
      PgTarget pg = PgTarget.fromEnvironment(Map.of("MESH_PG_URL", url));
      assertEquals("postgresql://owner@db.internal:5433/mesh?sslmode=require", pg.toolUrl(), url);
      assertEquals("jdbc:postgresql://db.internal:5433/mesh?sslmode=require", pg.jdbcUrl(), url);
      assertEquals(Map.of("PGPASSWORD", "s@cret"), pg.toolEnvironment(), url);
      assertFalse(pg.toString().contains("cret"), pg.toString());
    }
    Refused bad = assertThrows(Refused.class, () -> PgTarget.fromEnvironment(Map.of("MESH_PG_URL", "postgresql://owner:s%zzcret@h/db")));
    assertFalse(bad.getMessage().contains("cret"), "a refused URL is never quoted back: " + bad.getMessage());
  }

  private static void beat(Http http, int port, Nodes.Enrolled n, int seq) {
    HttpResponse<Buffer> r = http.send(HttpMethod.POST, port, "/v1/nodes/" + n.id() + "/heartbeat", n.token(), Nodes.beat(seq));
    assertEquals(200, r.statusCode(), r.bodyAsString());
  }

  private static JsonArray nodes(Http http, int port, String admin) {
    HttpResponse<Buffer> r = http.get(port, "/v1/nodes?limit=100", admin);
    assertEquals(200, r.statusCode(), r.bodyAsString());
    return r.bodyAsJsonObject().getJsonArray("items");
  }

  private static JsonObject acl(Http http, int port, String admin) {
    HttpResponse<Buffer> r = http.get(port, "/v1/acl?team=snap&environment=prod", admin);
    assertEquals(200, r.statusCode(), r.bodyAsString());
    return r.bodyAsJsonObject();
  }
}
