package io.meshplane.backup;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.PublicKey;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.SortedMap;
import java.util.TreeSet;

/**
 * {@code meshplane snapshot restore DIR}: whole or not at all, and only from the snapshot key's holder.
 *
 * <ol>
 *   <li>Without changing anything: the signature of manifest.txt (with a public key kept outside the
 *       snapshot), the manifest's form, every key file (a regular file, read without following links,
 *       named and shaped as auth keeps signing keys, hash as listed, a pair to sign with), the dump's
 *       hash (on a private copy, which is what is used from then on), the kinds of object the dump
 *       names and the form of its data rendered as SQL text; then the target: a role that cannot run
 *       code on the server, an empty schema public, an empty keys folder, a schema version this jar has.
 *   <li>The keys are written to a hidden folder beside the target keys folder.
 *   <li>The schema is made by this jar's own migrations up to the snapshot's version; the dump's names
 *       and data are checked against that catalog; the data (never a definition) is loaded in one
 *       transaction.
 *   <li>Once committed, the keys folder is renamed into place.
 * </ol>
 *
 * Any failure after step 1 removes the staged keys and, from step 3 on, drops what the migrations
 * made, so a retry starts from the same empty target.
 */
final class SnapshotRestore {
  /** The last step, moving the staged keys folder into place (replaceable in tests, to fail it). */
  @FunctionalInterface
  interface KeysMover {
    void move(Path staging, Path target) throws IOException;
  }

  static final KeysMover RENAME = (staging, target) -> Files.move(staging, target, StandardCopyOption.ATOMIC_MOVE);
  private static final Set<String> ENTRIES = Set.of(Manifest.FILE, Manifest.SIGNATURE, SnapshotExport.DUMP, SnapshotExport.KEYS);
  private static final int MAX_MANIFEST = 64 * 1024;

  private final PgTarget pg;
  private final Path keysTarget;
  private final PublicKey verifyKey;
  private final Path verifyKeyFile;
  private final KeysMover mover;

  SnapshotRestore(PgTarget pg, Path keysTarget, PublicKey verifyKey, Path verifyKeyFile, KeysMover mover) {
    this.pg = pg;
    this.keysTarget = keysTarget;
    this.verifyKey = verifyKey;
    this.verifyKeyFile = verifyKeyFile;
    this.mover = mover;
  }

  /** Returns the line to print when done. */
  String run(Path dir) throws IOException, SQLException {
    Path root = folder(dir);
    Manifest manifest = verifiedManifest(root);
    checkEntries(dir, root);
    SortedMap<String, byte[]> keys = KeyFiles.readSnapshot(root.resolve(SnapshotExport.KEYS), manifest.keys());
    KeyFiles.checkTarget(keysTarget);
    Path work = Folders.privateTemp("meshplane-restore");
    try {
      Path dump = privateCopy(root.resolve(SnapshotExport.DUMP), work, manifest.dumpSha256());
      Path list = work.resolve("list.txt");
      PgTools.list(dump, list, work);
      List<ArchiveContents.Entry> entries = ArchiveContents.parse(list);
      Path data = work.resolve("data.sql");
      PgTools.renderData(dump, data, work);
      DataScript.checkForm(data);

      TargetDatabase db = new TargetDatabase(pg);
      db.check();
      TreeSet<Integer> known = db.knownVersions();
      if (!known.contains(manifest.schemaVersion())) {
        throw new Refused(manifest.schemaVersion() > known.last()
            ? "the snapshot's schema version " + manifest.schemaVersion() + " is newer than this jar's (" + known.last()
                + "): restore it with the Meshplane version that took it, or a later one"
            : "the snapshot's schema version " + manifest.schemaVersion() + " is not a migration of this jar (" + known + ")");
      }
      Path staging = KeyFiles.stage(keysTarget, keys);
      DataScript.Summary loaded;
      try {
        db.migrate(manifest.schemaVersion());
        try (Connection c = db.connect()) {
          CatalogSchema schema = CatalogSchema.read(c);
          ArchiveContents.check(entries, schema, manifest.schemaVersion());
          DataScript.check(data, schema);
          try {
            loaded = db.load(c, schema, data, manifest);
          } catch (SQLException e) {
            // the data does not fit the schema it claims: a constraint, a type, a value
            if (e.getSQLState() != null && (e.getSQLState().startsWith("22") || e.getSQLState().startsWith("23"))) {
              throw new Refused("the dump's data does not load into Meshplane's schema version " + manifest.schemaVersion() + ": "
                  + Printable.message(e));
            }
            throw e;
          }
        }
        try {
          mover.move(staging, keysTarget);
        } catch (IOException e) {
          throw new IOException("the keys could not be moved into " + keysTarget + " (" + e.getMessage() + ")", e);
        }
      } catch (Exception | Error e) {
        String left = undo(db, staging);
        if (left != null) throw new Failed(Printable.message(e) + left, e);
        String undone = " (undone: the tables the migrations made were dropped again and no keys were written; the target is empty as"
            + " before)";
        if (e instanceof Refused) throw new Refused(e.getMessage() + undone);
        throw new Failed(Printable.message(e) + undone, e);
      }
      long rows = loaded.rows().values().stream().mapToLong(Long::longValue).sum();
      return "snapshot " + dir + " restored into " + pg + ": schema version " + manifest.schemaVersion() + ", taken at " + manifest.takenAt()
          + ", " + manifest.nodes() + " nodes, " + manifest.tokens() + " tokens, " + manifest.policyVersions() + " policy versions, "
          + manifest.auditEvents() + " audit events (" + rows + " rows in " + loaded.rows().size() + " tables); " + keys.size()
          + " key files in " + keysTarget + ". Start the replicas on this database and keys folder.";
    } finally {
      Folders.deleteQuietly(work);
    }
  }

  /**
   * Undoes steps 2-4: the staged keys, and everything in schema public (it was empty before). Returns
   * null when both are gone, else what is left for the operator to clean up.
   */
  private static String undo(TargetDatabase db, Path staging) {
    boolean keysGone = Folders.deleteQuietly(staging);
    String dbProblem = null;
    try {
      db.empty();
    } catch (SQLException | RuntimeException e) {
      dbProblem = Printable.message(e);
    }
    if (dbProblem == null && keysGone) return null;
    return (dbProblem == null ? "" : "; and the database could not be emptied again (" + dbProblem + "): drop what the restore made (or"
        + " drop and create the database) before a retry")
        + (keysGone ? "" : "; and the staged keys folder " + staging + " could not be removed: remove it");
  }

  /** A failure of the restore (exit 1), after which the target was returned to empty, or the message says what is left. */
  static final class Failed extends RuntimeException {
    private static final long serialVersionUID = 1L;

    Failed(String message, Throwable cause) {
      super(message, cause, false, false);
    }
  }

  /** The snapshot folder, and the public key kept apart from it. */
  private Path folder(Path dir) throws IOException {
    if (!Files.isDirectory(dir)) throw new Refused(dir + " is not a folder: no snapshot there");
    Path root = dir.toRealPath();
    if (verifyKeyFile.toRealPath().startsWith(root)) {
      throw new Refused("the public key " + verifyKeyFile + " is inside the snapshot: a snapshot cannot vouch for itself; keep the key apart");
    }
    if (KeyFiles.attributes(root.resolve(Manifest.SIGNATURE)) == null) {
      throw new Refused(dir + " is not signed (no " + Manifest.SIGNATURE + "): a restore accepts only snapshots signed with the snapshot key");
    }
    return root;
  }

  /** Once the manifest verifies: the folder holds exactly manifest.txt, manifest.sig, meshplane.dump (regular files) and keys/. */
  private static void checkEntries(Path dir, Path root) throws IOException {
    List<String> problems = new ArrayList<>();
    try (DirectoryStream<Path> entries = Files.newDirectoryStream(root)) {
      for (Path p : entries) {
        String name = p.getFileName().toString();
        if (!ENTRIES.contains(name)) problems.add(Printable.of(name) + " is not part of a snapshot");
      }
    }
    if (!problems.isEmpty()) throw new Refused(dir + ": " + String.join("; ", problems));
    BasicFileAttributes a = KeyFiles.attributes(root.resolve(SnapshotExport.DUMP));
    if (a == null) throw new Refused(dir + " is not a snapshot: " + SnapshotExport.DUMP + " is missing");
    if (!a.isRegularFile()) throw new Refused(dir + "/" + SnapshotExport.DUMP + " is not a regular file" + (a.isSymbolicLink() ? " (a symbolic link)" : ""));
  }

  /** manifest.txt, once its signature verifies with the public key. */
  private Manifest verifiedManifest(Path root) throws IOException {
    for (String name : List.of(Manifest.FILE, Manifest.SIGNATURE)) {
      BasicFileAttributes a = KeyFiles.attributes(root.resolve(name));
      if (a == null) throw new Refused(root + " is not a snapshot: " + name + " is missing");
      if (!a.isRegularFile()) throw new Refused(root + "/" + name + " is not a regular file" + (a.isSymbolicLink() ? " (a symbolic link)" : ""));
    }
    byte[] text = read(root.resolve(Manifest.FILE), MAX_MANIFEST);
    byte[] sig = read(root.resolve(Manifest.SIGNATURE), 1024);
    if (!SnapshotSignature.verify(verifyKey, text, sig)) {
      throw new Refused(Manifest.SIGNATURE + " does not verify with " + verifyKeyFile + ": the snapshot was signed with another key, or "
          + Manifest.FILE + " was changed after it was signed");
    }
    return Manifest.parse(text);
  }

  private static byte[] read(Path file, int max) throws IOException {
    try (InputStream in = Files.newInputStream(file, StandardOpenOption.READ, LinkOption.NOFOLLOW_LINKS)) {
      byte[] bytes = in.readNBytes(max + 1);
      if (bytes.length > max) throw new Refused(file.getFileName() + " is larger than it can be");
      return bytes;
    }
  }

  /** Copies the dump into the private working folder (not following links), checking its SHA-256 on the way. */
  private static Path privateCopy(Path dump, Path work, String sha256) throws IOException {
    Path copy = work.resolve(SnapshotExport.DUMP);
    Files.createFile(copy, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
    String actual;
    try (InputStream in = Files.newInputStream(dump, StandardOpenOption.READ, LinkOption.NOFOLLOW_LINKS);
         OutputStream out = Files.newOutputStream(copy, StandardOpenOption.TRUNCATE_EXISTING)) {
      actual = Hashes.copy(in, out);
    }
    if (!actual.equals(sha256)) {
      throw new Refused(SnapshotExport.DUMP + " does not match its SHA-256 in " + Manifest.FILE + " (damaged or altered)");
    }
    return copy;
  }
}
