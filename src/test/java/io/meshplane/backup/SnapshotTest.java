package io.meshplane.backup;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.meshplane.app.Meshplane;
import io.meshplane.testing.Http;
import io.meshplane.testing.Nodes;
import io.meshplane.testing.TestCluster;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.client.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Snapshots (OPERATIONS "Backups and snapshots"): {@code ops/snapshot.sh export} of a running
 * deployment, {@code restore} into a new database and keys folder, a new replica on it, and everything
 * a user relies on is back: the admin token and every agent credential verify, the nodes keep their
 * ids, addresses and last heartbeats, the policy its version and history, the audit trail its events,
 * and a new enrollment gets a new address. A restore never writes over a database or keys folder that
 * holds something, and a damaged dump is refused.
 */
@Timeout(300)
class SnapshotTest {
  private static final Path SCRIPT = Path.of("ops/snapshot.sh").toAbsolutePath();

  @Test
  void aSnapshotRestoresTheControlPlaneIntoANewDatabaseAndEveryCredentialStillWorks(@TempDir Path dir) throws Exception {
    Path snap = dir.resolve("snap");
    String admin;
    List<Nodes.Enrolled> fleet = new ArrayList<>();
    Map<String, JsonObject> before = new HashMap<>();
    long aclVersion;
    try (TestCluster source = TestCluster.of(1)) {
      Http http = source.http();
      Meshplane a = source.start(0, Map.of("writebehind.flush_interval", "200ms"));
      admin = source.admin();
      for (int i = 0; i < 3; i++) fleet.add(Nodes.enroll(http, a.coordinatorPort(), admin, "snap-" + i, "snap", "prod"));
      for (int i = 0; i < fleet.size(); i++) beat(http, a.coordinatorPort(), fleet.get(i), i);
      JsonObject policy = new JsonObject().put("grants", new JsonArray().add(new JsonObject().put("src", new JsonArray().add("tag:test"))
          .put("dst", new JsonArray().add("tag:test")).put("ports", new JsonArray().add("tcp/22"))));
      for (int v = 0; v < 2; v++) {
        HttpResponse<Buffer> r = http.send(HttpMethod.PUT, a.coordinatorPort(), "/v1/acl?team=snap&environment=prod", admin, policy);
        assertEquals(200, r.statusCode(), r.bodyAsString());
      }
      aclVersion = acl(http, a.coordinatorPort(), admin).getLong("version");
      // the write-behind has the heartbeats in PostgreSQL
      long deadline = System.currentTimeMillis() + 20_000;
      while (flushed(source) < fleet.size()) {
        assertTrue(System.currentTimeMillis() < deadline, "the heartbeats did not reach PostgreSQL");
        Thread.sleep(100);
      }
      for (Object o : nodes(http, a.coordinatorPort(), admin)) before.put(((JsonObject) o).getString("id"), (JsonObject) o);

      Result export = run(dir, Map.of("MESH_PG_URL", source.db().url(), "MESH_KEYS_DIR", source.replicas().keysDir().toString()),
          "export", snap.toString());
      assertEquals(0, export.code(), export.output());
      String manifest = Files.readString(snap.resolve("manifest.txt"));
      assertTrue(manifest.contains("nodes=3\n"), manifest);
      assertTrue(manifest.contains("policy_versions=2\n"), manifest);
      assertEquals(Set.of(PosixFilePermission.OWNER_READ, PosixFilePermission.OWNER_WRITE, PosixFilePermission.OWNER_EXECUTE),
          Files.getPosixFilePermissions(snap.resolve("keys")), "the snapshot's keys are a secret");
      try (var keys = Files.list(snap.resolve("keys"))) {
        for (Path k : keys.toList()) {
          assertEquals(Set.of(PosixFilePermission.OWNER_READ, PosixFilePermission.OWNER_WRITE), Files.getPosixFilePermissions(k), k.toString());
        }
      }
      Result again = run(dir, Map.of("MESH_PG_URL", source.db().url(), "MESH_KEYS_DIR", source.replicas().keysDir().toString()),
          "export", snap.toString());
      assertEquals(2, again.code(), "an export never writes into an existing folder: " + again.output());
    }

    try (TestCluster target = TestCluster.of(1)) {
      Http http = target.http();
      Path keys = dir.resolve("restored-keys");
      Map<String, String> env = Map.of("MESH_PG_URL", target.db().url(), "MESH_KEYS_DIR", keys.toString());

      // a damaged dump is refused before anything is written
      Path damaged = dir.resolve("damaged");
      copy(snap, damaged);
      byte[] dump = Files.readAllBytes(damaged.resolve("meshplane.dump"));
      dump[dump.length / 2] ^= 1;
      Files.write(damaged.resolve("meshplane.dump"), dump);
      Result refused = run(dir, env, "restore", damaged.toString());
      assertEquals(2, refused.code(), refused.output());
      assertEquals(0, tables(target), "nothing was restored from a damaged dump");
      assertFalse(Files.exists(keys), "no keys were restored from a damaged snapshot");

      Result restore = run(dir, env, "restore", snap.toString());
      assertEquals(0, restore.code(), restore.output());
      int restoredTables = tables(target);
      Result overwrite = run(dir, env, "restore", snap.toString());
      assertEquals(2, overwrite.code(), "a restore never writes over a database that holds tables: " + overwrite.output());
      assertEquals(restoredTables, tables(target));

      Meshplane b = target.start(0, Map.of("auth.keys_dir", keys.toString()));
      // the admin token from before the snapshot verifies, and the inventory is the same
      JsonArray items = nodes(http, b.coordinatorPort(), admin);
      assertEquals(before.size(), items.size(), items.encodePrettily());
      for (Object o : items) {
        JsonObject n = (JsonObject) o;
        JsonObject was = before.get(n.getString("id"));
        assertEquals(was.getString("address"), n.getString("address"));
        assertEquals(was.getString("heartbeat"), n.getString("heartbeat"), "the last flushed heartbeat is restored");
        assertEquals(was.getJsonArray("tags"), n.getJsonArray("tags"));
      }
      assertEquals(aclVersion, acl(http, b.coordinatorPort(), admin).getLong("version"));
      JsonObject history = http.get(b.coordinatorPort(), "/v1/acl/versions?team=snap&environment=prod", admin).bodyAsJsonObject();
      assertEquals(2, history.getJsonArray("items").size(), history.encodePrettily());
      JsonArray enrolled = http.get(b.coordinatorPort(), "/v1/audit?action=node.enroll&limit=100", admin).bodyAsJsonObject().getJsonArray("items");
      assertEquals(fleet.size(), enrolled.size(), "the audit trail is restored");
      // every agent credential verifies and its node beats again
      for (int i = 0; i < fleet.size(); i++) beat(http, b.coordinatorPort(), fleet.get(i), 100 + i);
      // the address sequence is restored: a new node gets a new address
      Nodes.Enrolled fresh = Nodes.enroll(http, b.coordinatorPort(), admin, "snap-new", "snap", "prod");
      for (JsonObject was : before.values()) assertFalse(was.getString("address").equals(fresh.node().getString("address")), "address reused");
    }
  }

  private record Result(int code, String output) {}

  private static Result run(Path dir, Map<String, String> env, String... args) throws Exception {
    List<String> command = new ArrayList<>(List.of("bash", SCRIPT.toString()));
    command.addAll(List.of(args));
    Path out = Files.createTempFile(dir, "snapshot", ".out");
    ProcessBuilder pb = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(out.toFile());
    pb.environment().putAll(env);
    Process p = pb.start();
    assertTrue(p.waitFor(120, TimeUnit.SECONDS), "ops/snapshot.sh did not finish");
    return new Result(p.exitValue(), Files.readString(out));
  }

  private static void beat(Http http, int port, Nodes.Enrolled n, int seq) {
    HttpResponse<Buffer> r = http.send(HttpMethod.POST, port, "/v1/nodes/" + n.id() + "/heartbeat", n.token(), Nodes.beat(seq));
    assertEquals(200, r.statusCode(), r.bodyAsString());
  }

  private static JsonArray nodes(Http http, int port, String admin) {
    HttpResponse<Buffer> r = http.get(port, "/v1/nodes?team=snap&limit=100", admin);
    assertEquals(200, r.statusCode(), r.bodyAsString());
    return r.bodyAsJsonObject().getJsonArray("items");
  }

  private static JsonObject acl(Http http, int port, String admin) {
    HttpResponse<Buffer> r = http.get(port, "/v1/acl?team=snap&environment=prod", admin);
    assertEquals(200, r.statusCode(), r.bodyAsString());
    return r.bodyAsJsonObject();
  }

  private static long flushed(TestCluster c) throws Exception {
    try (Connection conn = c.db().connect(); Statement st = conn.createStatement();
         ResultSet rs = st.executeQuery("SELECT count(*) FROM nodes WHERE team = 'snap' AND heartbeat_at IS NOT NULL")) {
      rs.next();
      return rs.getLong(1);
    }
  }

  private static int tables(TestCluster c) throws Exception {
    try (Connection conn = c.db().connect(); Statement st = conn.createStatement();
         ResultSet rs = st.executeQuery("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'")) {
      rs.next();
      return rs.getInt(1);
    }
  }

  private static void copy(Path from, Path to) throws Exception {
    Files.createDirectories(to.resolve("keys"));
    try (var files = Files.walk(from)) {
      for (Path p : files.filter(Files::isRegularFile).toList()) Files.copy(p, to.resolve(from.relativize(p).toString()));
    }
  }
}
