package io.meshplane.backup;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.PrivateKey;
import java.security.SecureRandom;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.HexFormat;
import java.util.Map;
import java.util.SortedMap;
import java.util.TreeMap;

/**
 * {@code meshplane snapshot export DIR}: the database (pg_dump of schema public, one MVCC snapshot) and
 * the token signing keys into a new folder, with a manifest signed by the snapshot signing key. The
 * folder is written beside DIR under a hidden name and renamed to DIR when complete, so DIR is either
 * a whole snapshot or absent. Mode 0700, files 0600.
 */
final class SnapshotExport {
  static final String DUMP = "meshplane.dump";
  static final String KEYS = "keys";

  private SnapshotExport() {}

  /** Returns the line to print when done. */
  static String run(PgTarget pg, Path keysDir, PrivateKey signingKey, Path dir) throws IOException, SQLException {
    Path target = dir.toAbsolutePath().normalize();
    if (Files.exists(target, LinkOption.NOFOLLOW_LINKS)) throw new Refused(dir + " exists already: a snapshot goes into a new folder");
    SortedMap<String, byte[]> keys = KeyFiles.readSource(keysDir);
    Files.createDirectories(target.getParent());
    byte[] random = new byte[6];
    new SecureRandom().nextBytes(random);
    Path staging = target.resolveSibling("." + target.getFileName() + ".partial-" + HexFormat.of().formatHex(random));
    Files.createDirectory(staging, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
    Path work = null;
    try {
      Files.setPosixFilePermissions(staging, PosixFilePermissions.fromString("rwx------"));
      work = Folders.privateTemp("meshplane-export");
      Manifest facts = dump(pg, staging.resolve(DUMP), work);
      Files.setPosixFilePermissions(staging.resolve(DUMP), PosixFilePermissions.fromString("rw-------"));
      String dumpSha;
      try (InputStream in = Files.newInputStream(staging.resolve(DUMP))) {
        dumpSha = Hashes.copy(in, OutputStream.nullOutputStream());
      }
      Path keysOut = Files.createDirectory(staging.resolve(KEYS), PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
      Files.setPosixFilePermissions(keysOut, PosixFilePermissions.fromString("rwx------"));
      SortedMap<String, String> keyHashes = new TreeMap<>();
      for (Map.Entry<String, byte[]> e : keys.entrySet()) {
        writePrivate(keysOut.resolve(e.getKey()), e.getValue());
        keyHashes.put(e.getKey(), Hashes.sha256(e.getValue()));
      }
      Manifest manifest = new Manifest(facts.takenAt(), facts.schemaVersion(), facts.nodes(), facts.tokens(), facts.policyVersions(),
          facts.auditEvents(), dumpSha, keyHashes);
      byte[] text = manifest.render();
      writePrivate(staging.resolve(Manifest.FILE), text);
      writePrivate(staging.resolve(Manifest.SIGNATURE), SnapshotSignature.sign(signingKey, text).getBytes(java.nio.charset.StandardCharsets.US_ASCII));
      if (Files.exists(target, LinkOption.NOFOLLOW_LINKS)) throw new Refused(dir + " appeared while the snapshot was taken: not written over");
      Files.move(staging, target, StandardCopyOption.ATOMIC_MOVE);
      staging = null;
      return "snapshot written to " + dir + ": schema version " + manifest.schemaVersion() + ", taken at " + manifest.takenAt() + ", "
          + manifest.nodes() + " nodes, " + manifest.tokens() + " tokens, " + manifest.policyVersions() + " policy versions, "
          + manifest.auditEvents() + " audit events, " + keys.size() + " key files; manifest signed";
    } finally {
      Folders.deleteQuietly(staging);
      Folders.deleteQuietly(work);
    }
  }

  /**
   * Dumps the database with pg_dump reading the MVCC snapshot this transaction exported, and returns
   * the facts (schema version, counts, time) read in that same snapshot (dump hash and keys empty).
   */
  private static Manifest dump(PgTarget pg, Path out, Path work) throws IOException, SQLException {
    try (Connection c = pg.connect()) {
      c.setAutoCommit(false);
      c.setTransactionIsolation(Connection.TRANSACTION_REPEATABLE_READ);
      c.setReadOnly(true);
      try (Statement st = c.createStatement()) {
        try (ResultSet rs = st.executeQuery("SELECT to_regclass('public.flyway_schema_history') IS NOT NULL, to_regclass('public.nodes') IS NOT NULL")) {
          rs.next();
          if (!rs.getBoolean(1) || !rs.getBoolean(2)) {
            throw new Refused("the database " + pg.database() + " holds no Meshplane schema in schema public (no flyway_schema_history or nodes)");
          }
        }
        String snapshot;
        try (ResultSet rs = st.executeQuery("SELECT pg_export_snapshot()")) {
          rs.next();
          snapshot = rs.getString(1);
        }
        Manifest facts;
        try (ResultSet rs = st.executeQuery("SELECT (SELECT max(version::int) FROM public.flyway_schema_history WHERE success),"
            + " (SELECT count(*) FROM public.nodes), (SELECT count(*) FROM public.tokens), (SELECT count(*) FROM public.acl_policies),"
            + " (SELECT count(*) FROM public.audit_events), to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')")) {
          rs.next();
          facts = new Manifest(rs.getString(6), rs.getInt(1), rs.getLong(2), rs.getLong(3), rs.getLong(4), rs.getLong(5), "", new TreeMap<>());
        }
        PgTools.dump(pg, snapshot, out, work);
        c.commit();
        return facts;
      }
    }
  }

  private static void writePrivate(Path file, byte[] bytes) throws IOException {
    Files.createFile(file, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
    Files.setPosixFilePermissions(file, PosixFilePermissions.fromString("rw-------"));
    Files.write(file, bytes, StandardOpenOption.TRUNCATE_EXISTING);
  }
}
