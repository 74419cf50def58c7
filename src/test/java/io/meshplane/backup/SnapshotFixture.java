package io.meshplane.backup;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.meshplane.testing.ChildJvm;
import io.meshplane.testing.TestDatabase;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.security.PrivateKey;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.function.UnaryOperator;
import java.util.stream.Stream;
import picocli.CommandLine;

/**
 * What SnapshotTest needs around a snapshot: restore targets (a database owned by a role of its own that
 * is no superuser, and a keys folder that does not exist yet), the command run in this JVM or as the
 * real command line, copies of a snapshot to alter, re-signing with a given key, and the facts a test
 * asserts ("nothing changed": no table, no function, no keys folder, no staged keys).
 */
final class SnapshotFixture implements AutoCloseable {
  record Result(int code, String output) {}

  /** A restore target: a new database owned by {@code role} (LOGIN, nothing else), and a keys folder path. */
  record Target(String role, String db, String url, Path keys) {
    Map<String, String> env(Path verifyKey) {
      return Map.of("MESH_PG_URL", url, "MESH_KEYS_DIR", keys.toString(), SnapshotCommand.VERIFY_KEY_ENV, verifyKey.toString());
    }
  }

  static final String PASSWORD_MARK = "pw-never-shown-";
  private final List<Target> targets = new ArrayList<>();
  private final List<String> databases = new ArrayList<>();

  static Connection admin(String db) throws SQLException {
    return DriverManager.getConnection("jdbc:postgresql://" + TestDatabase.HOST + ":" + TestDatabase.PORT + "/" + db, TestDatabase.USER, "");
  }

  static void sql(String db, String... statements) throws SQLException {
    try (Connection c = admin(db); Statement st = c.createStatement()) {
      for (String s : statements) st.execute(s);
    }
  }

  static long number(String db, String query) throws SQLException {
    try (Connection c = admin(db); Statement st = c.createStatement(); ResultSet rs = st.executeQuery(query)) {
      rs.next();
      return rs.getLong(1);
    }
  }

  Target target(Path dir) throws SQLException {
    String suffix = Long.toHexString(ThreadLocalRandom.current().nextLong() & Long.MAX_VALUE);
    String role = "mp_snap_owner_" + suffix;
    String db = "mp_snap_" + suffix;
    sql("postgres", "CREATE ROLE " + role + " LOGIN PASSWORD '" + PASSWORD_MARK + suffix + "'", "CREATE DATABASE " + db + " OWNER " + role);
    Target t = new Target(role, db, "postgresql://" + role + ":" + PASSWORD_MARK + suffix + "@" + TestDatabase.HOST + ":" + TestDatabase.PORT
        + "/" + db, dir.resolve("keys-" + suffix));
    targets.add(t);
    return t;
  }

  /** A scratch database owned by the superuser, dropped on close. */
  String scratchDatabase() throws SQLException {
    String db = "mp_snap_scratch_" + Long.toHexString(ThreadLocalRandom.current().nextLong() & Long.MAX_VALUE);
    sql("postgres", "CREATE DATABASE " + db);
    databases.add(db);
    return db;
  }

  /** Tables, views, sequences, functions and types in the target's schema public. */
  static long objects(Target t) throws SQLException {
    return number(t.db(), "SELECT (SELECT count(*) FROM pg_class WHERE relnamespace = 'public'::regnamespace AND relkind IN ('r','p','v','m','S','f'))"
        + " + (SELECT count(*) FROM pg_proc WHERE pronamespace = 'public'::regnamespace)");
  }

  /** The restore left nothing behind: the database as empty as before, no keys folder, no staged keys, no stack trace. */
  static void assertNothingChanged(Target t, Result r) throws Exception {
    assertEquals(0, objects(t), "schema public is empty again after: " + r.output());
    assertFalse(Files.exists(t.keys(), LinkOption.NOFOLLOW_LINKS), "no keys folder was made: " + r.output());
    try (Stream<Path> siblings = Files.list(t.keys().getParent())) {
      List<String> staged = siblings.map(p -> p.getFileName().toString()).filter(n -> n.startsWith("." + t.keys().getFileName())).toList();
      assertEquals(List.of(), staged, "no staged keys are left");
    }
    assertFalse(r.output().contains("\tat ") || r.output().contains("Exception:"), "no stack trace: " + r.output());
    assertFalse(r.output().contains(PASSWORD_MARK), "the password is never shown: " + r.output());
  }

  /** The newest schema version the migrations in this build make (the jar's). */
  static int latestSchema() throws java.io.IOException {
    try (Stream<Path> files = Files.list(Path.of("src/main/resources/db/migration"))) {
      return files.map(f -> f.getFileName().toString()).filter(n -> n.matches("V\\d+__.*\\.sql"))
          .mapToInt(n -> Integer.parseInt(n.substring(1, n.indexOf("__")))).max().orElseThrow();
    }
  }

  /** The tables the migrations create, and Flyway's history: what a restored schema holds. */
  static long migratedTables() throws java.io.IOException {
    long n = 1;
    try (Stream<Path> files = Files.list(Path.of("src/main/resources/db/migration"))) {
      for (Path f : files.toList()) {
        for (String line : Files.readAllLines(f)) if (line.trim().startsWith("CREATE TABLE")) n++;
      }
    }
    return n;
  }

  /** A restore went through: Meshplane's tables hold the snapshot's data, and the keys are in place (0700, 0600). */
  static void assertRestored(Target t, Result r, Path snap) throws Exception {
    assertEquals(0, r.code(), r.output());
    assertEquals(migratedTables(), number(t.db(), "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'"), r.output());
    assertEquals(number(t.db(), "SELECT count(*) FROM public.nodes"), Long.parseLong(fact(snap, "nodes")));
    try (Stream<Path> files = Files.list(snap.resolve("keys")); Stream<Path> restored = Files.list(t.keys())) {
      assertEquals(files.map(p -> p.getFileName().toString()).sorted().toList(), restored.map(p -> p.getFileName().toString()).sorted().toList());
    }
    assertEquals("rwx------", java.nio.file.attribute.PosixFilePermissions.toString(Files.getPosixFilePermissions(t.keys())));
  }

  static String fact(Path snap, String name) throws IOException {
    for (String line : Files.readAllLines(snap.resolve("manifest.txt"))) if (line.startsWith(name + "=")) return line.substring(name.length() + 1);
    throw new AssertionError("no " + name + " in the manifest");
  }

  /** The command in this JVM, with its own environment and last restore step. */
  static Result inProcess(Map<String, String> env, SnapshotRestore.KeysMover mover, String... args) {
    StringWriter out = new StringWriter();
    CommandLine cli = new CommandLine(new SnapshotCommand(env, mover));
    PrintWriter w = new PrintWriter(out, true);
    cli.setOut(w);
    cli.setErr(w);
    int code = cli.execute(args);
    w.flush();
    return new Result(code, out.toString());
  }

  static Result inProcess(Map<String, String> env, String... args) {
    return inProcess(env, SnapshotRestore.RENAME, args);
  }

  /** The real command line, {@code meshplane snapshot ...}, in a child JVM. */
  static Result cli(Path dir, Map<String, String> env, String... args) throws Exception {
    Path log = Files.createTempFile(dir, "snapshot", ".log");
    String[] all = new String[args.length + 1];
    all[0] = "snapshot";
    System.arraycopy(args, 0, all, 1, args.length);
    Process p = ChildJvm.launch(dir, env, log, null, all);
    assertTrue(p.waitFor(180, TimeUnit.SECONDS), "meshplane snapshot did not finish");
    return new Result(p.exitValue(), Files.readString(log));
  }

  /** A copy of a snapshot folder (regular files only, as export writes them) to alter. */
  static Path copy(Path from, Path to) throws IOException {
    Files.createDirectories(to.resolve("keys"));
    try (Stream<Path> files = Files.walk(from)) {
      for (Path p : files.filter(Files::isRegularFile).toList()) Files.copy(p, to.resolve(from.relativize(p).toString()), StandardCopyOption.COPY_ATTRIBUTES);
    }
    return to;
  }

  /** Edits manifest.txt and signs it again with {@code key}: the snapshot as its key's holder would have made it. */
  static void resign(Path snap, Path key, UnaryOperator<String> edit) throws IOException {
    Path manifest = snap.resolve("manifest.txt");
    Files.writeString(manifest, edit.apply(Files.readString(manifest, StandardCharsets.US_ASCII)), StandardCharsets.US_ASCII);
    PrivateKey k = SnapshotSignature.readPrivate(key, "test key");
    Files.writeString(snap.resolve("manifest.sig"), SnapshotSignature.sign(k, Files.readAllBytes(manifest)), StandardCharsets.US_ASCII);
  }

  /** manifest.txt with {@code name}'s value replaced. */
  static UnaryOperator<String> set(String name, String value) {
    return m -> m.replaceFirst("(?m)^" + name + "=.*$", name + "=" + value);
  }

  static String sha256(Path file) throws IOException {
    return Hashes.sha256(Files.readAllBytes(file));
  }

  /** pg_dump of a database, as export runs it (custom format, schema public, no owner or privileges). */
  static void pgDump(String db, Path out) throws Exception {
    Process p = new ProcessBuilder("pg_dump", "--format=custom", "--no-owner", "--no-privileges", "--encoding=UTF8", "--schema=public",
        "--file=" + out, "--dbname=postgresql://" + TestDatabase.USER + "@" + TestDatabase.HOST + ":" + TestDatabase.PORT + "/" + db)
        .redirectErrorStream(true).start();
    String said = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertTrue(p.waitFor(60, TimeUnit.SECONDS));
    assertEquals(0, p.exitValue(), said);
  }

  static Map<String, String> with(Map<String, String> env, String name, String value) {
    Map<String, String> m = new HashMap<>(env);
    m.put(name, value);
    return m;
  }

  @Override
  public void close() throws SQLException {
    for (Target t : targets) sql("postgres", "DROP DATABASE IF EXISTS " + t.db() + " WITH (FORCE)", "DROP ROLE IF EXISTS " + t.role());
    for (String db : databases) sql("postgres", "DROP DATABASE IF EXISTS " + db + " WITH (FORCE)");
    targets.clear();
    databases.clear();
  }
}
