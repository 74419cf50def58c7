package io.meshplane.backup;

import io.meshplane.common.MigrationChecksums;
import java.io.IOException;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import java.util.stream.Collectors;
import org.flywaydb.core.Flyway;
import org.flywaydb.core.api.MigrationInfo;

/**
 * The database a snapshot is restored into, reached as the URL's own role: checked (a role that cannot
 * run code on the server, an empty schema public it may create in), migrated by the product's own
 * migrations up to the snapshot's schema version, loaded in one transaction, and emptied again when
 * anything after the migrations fails.
 */
final class TargetDatabase {
  /** The server-side powers that would let SQL run programs or touch the server's files. */
  private static final List<String> SERVER_ROLES = List.of("pg_execute_server_program", "pg_read_server_files", "pg_write_server_files");
  private static final String HISTORY = "flyway_schema_history";

  private final PgTarget pg;

  TargetDatabase(PgTarget pg) {
    this.pg = pg;
  }

  /** Everything about the target that can be checked without changing it. */
  void check() throws SQLException {
    try (Connection c = pg.connect(); Statement st = c.createStatement()) {
      checkRole(st);
      try (ResultSet rs = st.executeQuery("SELECT current_schema(), has_schema_privilege('public', 'CREATE')")) {
        rs.next();
        if (!"public".equals(rs.getString(1))) {
          throw new Refused("the role " + pg.user() + " creates tables in schema " + rs.getString(1) + " (its search_path), not in public:"
              + " restore as a role without a schema of its own name");
        }
        if (!rs.getBoolean(2)) {
          throw new Refused("the role " + pg.user() + " may not create tables in schema public of " + pg.database() + ": restore as the"
              + " database's owner (CREATE DATABASE " + pg.database() + " OWNER " + pg.user() + ")");
        }
      }
      String held = contents(st);
      if (!held.isEmpty()) {
        throw new Refused("the target database " + pg.database() + " is not empty (schema public holds " + held + "): restore into a new,"
            + " empty database");
      }
    }
  }

  private void checkRole(Statement st) throws SQLException {
    String role;
    boolean superuser;
    try (ResultSet rs = st.executeQuery("SELECT session_user, rolsuper FROM pg_roles WHERE rolname = session_user")) {
      rs.next();
      role = rs.getString(1);
      superuser = rs.getBoolean(2);
    }
    List<String> powers = new ArrayList<>();
    try (ResultSet rs = st.executeQuery("SELECT rolname FROM pg_roles WHERE (rolsuper OR rolname IN ('" + String.join("', '", SERVER_ROLES)
        + "')) AND rolname <> session_user AND pg_has_role(session_user, oid, 'MEMBER') ORDER BY rolname")) {
      while (rs.next()) powers.add(rs.getString(1));
    }
    if (!superuser && powers.isEmpty()) return;
    String why = superuser ? role + " is a superuser" : role + " is a member of " + String.join(", ", powers)
        + " (it can become a superuser, or run programs or read and write files on the database server)";
    throw new Refused("the restore connects as the role of MESH_PG_URL, and " + why + ". A restore must not be able to run anything on"
        + " the server, so it connects as a role that only owns the target database. As a superuser, create one and its database:\n"
        + "    CREATE ROLE meshplane_owner LOGIN PASSWORD '<password>';\n"
        + "    CREATE DATABASE meshplane OWNER meshplane_owner;\n"
        + "and restore with MESH_PG_URL=postgresql://meshplane_owner:<password>@<host>:<port>/meshplane");
  }

  /** What schema public holds besides nothing ("" when empty): relations, routines, types. */
  private static String contents(Statement st) throws SQLException {
    try (ResultSet rs = st.executeQuery("SELECT"
        + " (SELECT count(*) FROM pg_class c WHERE c.relnamespace = 'public'::regnamespace AND c.relkind IN ('r', 'p', 'v', 'm', 'S', 'f')),"
        + " (SELECT count(*) FROM pg_proc p WHERE p.pronamespace = 'public'::regnamespace),"
        + " (SELECT count(*) FROM pg_type t WHERE t.typnamespace = 'public'::regnamespace AND t.typcategory <> 'A'"
        + "   AND (t.typrelid = 0 OR EXISTS (SELECT 1 FROM pg_class r WHERE r.oid = t.typrelid AND r.relkind = 'c')))")) {
      rs.next();
      List<String> held = new ArrayList<>();
      if (rs.getLong(1) > 0) held.add(rs.getLong(1) + " tables, views or sequences");
      if (rs.getLong(2) > 0) held.add(rs.getLong(2) + " functions");
      if (rs.getLong(3) > 0) held.add(rs.getLong(3) + " types");
      return String.join(", ", held);
    }
  }

  private Flyway flyway(Integer target) {
    var config = Flyway.configure().dataSource(pg.jdbcUrl(), pg.user(), pg.password()).locations("classpath:db/migration");
    if (target != null) config.target(String.valueOf(target));
    return config.load();
  }

  /** The migration versions this jar holds. */
  TreeSet<Integer> knownVersions() {
    TreeSet<Integer> versions = new TreeSet<>();
    for (MigrationInfo m : flyway(null).info().all()) {
      if (m.getVersion() == null) continue;
      try {
        versions.add(Integer.parseInt(m.getVersion().getVersion()));
      } catch (NumberFormatException notAnInteger) {
        // Meshplane's versions are integers
      }
    }
    return versions;
  }

  /** The product's own migrations, as {@code meshplane migrate} runs them, up to {@code version}. */
  void migrate(int version) {
    flyway(version).migrate();
  }

  Connection connect() throws SQLException {
    return pg.connect();
  }

  /**
   * Loads the checked data in one transaction: empties the tables the migrations filled (their schema
   * history included, which the dump brings), runs the data, and checks the loaded schema history and
   * counts against the migrations and the manifest before committing.
   */
  DataScript.Summary load(Connection c, CatalogSchema schema, Path data, Manifest manifest) throws SQLException, IOException {
    c.setAutoCommit(false);
    try (Statement st = c.createStatement()) {
      st.execute("SET LOCAL statement_timeout = 0");
      st.execute("SET LOCAL lock_timeout = 0");
      st.execute("SET LOCAL idle_in_transaction_session_timeout = 0");
      st.execute("SET LOCAL client_min_messages = warning");
      st.execute("SELECT pg_catalog.set_config('search_path', '', true)");
      List<String> migrated = history(st);
      st.execute("TRUNCATE " + schema.tables().stream().map(schema::qualifiedTable).collect(Collectors.joining(", ")));
      DataScript.Summary loaded = DataScript.load(data, schema, c);
      // a snapshot of a database migrated before some comments were reworded carries their old checksums
      MigrationChecksums.realign(c, "public." + HISTORY);
      List<String> restored = history(st);
      if (!restored.equals(migrated)) {
        throw new Refused("the dump's schema history is not the one this jar's migrations up to version " + manifest.schemaVersion()
            + " write (dump: " + restored.size() + " migrations, jar: " + migrated.size() + "): taken from another schema than its manifest says");
      }
      Map<String, Long> counts = Map.of("nodes", manifest.nodes(), "tokens", manifest.tokens(), "acl_policies", manifest.policyVersions(),
          "audit_events", manifest.auditEvents());
      for (Map.Entry<String, Long> e : new java.util.TreeMap<>(counts).entrySet()) {
        if (!schema.tables().contains(e.getKey())) {
          if (e.getValue() != 0) throw new Refused("the manifest counts " + e.getKey() + ", a table schema version " + manifest.schemaVersion() + " lacks");
          continue;
        }
        try (ResultSet rs = st.executeQuery("SELECT count(*) FROM " + schema.qualifiedTable(e.getKey()))) {
          rs.next();
          if (rs.getLong(1) != e.getValue()) {
            throw new Refused("the dump holds " + rs.getLong(1) + " rows of " + e.getKey() + ", its manifest says " + e.getValue());
          }
        }
      }
      c.commit();
      return loaded;
    } catch (SQLException | IOException | RuntimeException e) {
      try {
        c.rollback();
      } catch (SQLException ignored) {
        // the connection is gone: so is the transaction
      }
      throw e;
    }
  }

  private static List<String> history(Statement st) throws SQLException {
    List<String> rows = new ArrayList<>();
    try (ResultSet rs = st.executeQuery("SELECT version, description, type, script, checksum, success FROM public." + HISTORY
        + " ORDER BY installed_rank")) {
      while (rs.next()) {
        rows.add(rs.getString(1) + "|" + rs.getString(2) + "|" + rs.getString(3) + "|" + rs.getString(4) + "|" + rs.getString(5) + "|"
            + rs.getBoolean(6));
      }
    }
    return rows;
  }

  /**
   * Returns schema public to empty: drops every relation, routine and type in it. Called only after
   * {@link #check()} found it empty, so everything there was made by this restore.
   */
  void empty() throws SQLException {
    try (Connection c = pg.connect(); Statement st = c.createStatement()) {
      c.setAutoCommit(false);
      List<String> drops = new ArrayList<>();
      try (ResultSet rs = st.executeQuery("SELECT CASE c.relkind WHEN 'v' THEN 'VIEW' WHEN 'm' THEN 'MATERIALIZED VIEW' WHEN 'S' THEN 'SEQUENCE'"
          + " WHEN 'f' THEN 'FOREIGN TABLE' ELSE 'TABLE' END, format('%I.%I', 'public', c.relname) FROM pg_class c"
          + " WHERE c.relnamespace = 'public'::regnamespace AND c.relkind IN ('r', 'p', 'v', 'm', 'S', 'f') ORDER BY c.relkind DESC")) {
        while (rs.next()) drops.add("DROP " + rs.getString(1) + " IF EXISTS " + rs.getString(2) + " CASCADE");
      }
      try (ResultSet rs = st.executeQuery("SELECT format('%I.%I(%s)', 'public', p.proname, pg_get_function_identity_arguments(p.oid))"
          + " FROM pg_proc p WHERE p.pronamespace = 'public'::regnamespace")) {
        while (rs.next()) drops.add("DROP ROUTINE IF EXISTS " + rs.getString(1) + " CASCADE");
      }
      try (ResultSet rs = st.executeQuery("SELECT format('%I.%I', 'public', t.typname) FROM pg_type t"
          + " WHERE t.typnamespace = 'public'::regnamespace AND t.typcategory <> 'A'"
          + " AND (t.typrelid = 0 OR EXISTS (SELECT 1 FROM pg_class r WHERE r.oid = t.typrelid AND r.relkind = 'c'))")) {
        while (rs.next()) drops.add("DROP TYPE IF EXISTS " + rs.getString(1) + " CASCADE");
      }
      for (String d : drops) st.execute(d);
      c.commit();
    }
  }
}
