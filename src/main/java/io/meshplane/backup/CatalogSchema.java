package io.meshplane.backup;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * Schema {@code public} as the product's own migrations made it, read from the catalog: what a
 * snapshot's dump may name and what its data may be loaded into. Names are as PostgreSQL stores them
 * (the form pg_restore --list prints); {@link #copyHeader} quotes them as pg_dump does.
 */
final class CatalogSchema {
  /** table → its columns, quoted, in the order pg_dump writes them (attnum; no dropped or generated column) */
  private final Map<String, List<String>> columns;
  private final Map<String, String> quotedTables;
  private final Map<String, String> quotedSequences;
  /** kind of pg_restore --list entry → the tags it may have */
  private final Map<String, Set<String>> objects;

  private CatalogSchema(Map<String, List<String>> columns, Map<String, String> quotedTables, Map<String, String> quotedSequences,
                        Map<String, Set<String>> objects) {
    this.columns = columns;
    this.quotedTables = quotedTables;
    this.quotedSequences = quotedSequences;
    this.objects = objects;
  }

  static CatalogSchema read(Connection c) throws SQLException {
    Map<String, List<String>> columns = new TreeMap<>();
    Map<String, String> tables = new TreeMap<>();
    Map<String, String> sequences = new TreeMap<>();
    Map<String, Set<String>> objects = new HashMap<>();
    try (Statement st = c.createStatement()) {
      try (ResultSet rs = st.executeQuery("SELECT c.relname, quote_ident(c.relname), c.relkind FROM pg_class c"
          + " JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p', 'S', 'v', 'm')")) {
        while (rs.next()) {
          String kind = switch (rs.getString(3)) {
            case "r", "p" -> "TABLE";
            case "S" -> "SEQUENCE";
            case "v" -> "VIEW";
            default -> "MATERIALIZED VIEW";
          };
          add(objects, kind, rs.getString(1));
          if (kind.equals("TABLE")) {
            tables.put(rs.getString(1), rs.getString(2));
            columns.put(rs.getString(1), new ArrayList<>());
          } else if (kind.equals("SEQUENCE")) {
            sequences.put(rs.getString(1), rs.getString(2));
          }
        }
      }
      try (ResultSet rs = st.executeQuery("SELECT c.relname, quote_ident(a.attname), a.attname, a.atthasdef FROM pg_attribute a"
          + " JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace"
          + " WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p') AND a.attnum > 0 AND NOT a.attisdropped AND a.attgenerated = ''"
          + " ORDER BY c.relname, a.attnum")) {
        while (rs.next()) {
          columns.get(rs.getString(1)).add(rs.getString(2));
          if (rs.getBoolean(4)) add(objects, "DEFAULT", rs.getString(1) + " " + rs.getString(3));
        }
      }
      // indexes of their own (those behind a primary key, unique or exclusion constraint are the constraint's)
      try (ResultSet rs = st.executeQuery("SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
          + " WHERE n.nspname = 'public' AND c.relkind IN ('i', 'I')"
          + " AND NOT EXISTS (SELECT 1 FROM pg_constraint k WHERE k.conindid = c.oid AND k.contype IN ('p', 'u', 'x'))")) {
        while (rs.next()) add(objects, "INDEX", rs.getString(1));
      }
      try (ResultSet rs = st.executeQuery("SELECT t.relname, k.conname, k.contype FROM pg_constraint k JOIN pg_class t ON t.oid = k.conrelid"
          + " JOIN pg_namespace n ON n.oid = k.connamespace WHERE n.nspname = 'public'")) {
        while (rs.next()) {
          String kind = switch (rs.getString(3)) {
            case "f" -> "FK CONSTRAINT";
            case "c" -> "CHECK CONSTRAINT";
            case "p", "u", "x" -> "CONSTRAINT";
            default -> "OTHER CONSTRAINT";
          };
          add(objects, kind, rs.getString(1) + " " + rs.getString(2));
        }
      }
      try (ResultSet rs = st.executeQuery("SELECT p.proname || '(' || pg_get_function_identity_arguments(p.oid) || ')',"
          + " CASE p.prokind WHEN 'p' THEN 'PROCEDURE' WHEN 'a' THEN 'AGGREGATE' ELSE 'FUNCTION' END"
          + " FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = 'public'")) {
        while (rs.next()) add(objects, rs.getString(2), rs.getString(1));
      }
      try (ResultSet rs = st.executeQuery("SELECT c.relname, g.tgname FROM pg_trigger g JOIN pg_class c ON c.oid = g.tgrelid"
          + " JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'public' AND NOT g.tgisinternal")) {
        while (rs.next()) add(objects, "TRIGGER", rs.getString(1) + " " + rs.getString(2));
      }
      // types made on their own (not a table's row type, not an array type)
      try (ResultSet rs = st.executeQuery("SELECT t.typname, CASE t.typtype WHEN 'd' THEN 'DOMAIN' ELSE 'TYPE' END FROM pg_type t"
          + " JOIN pg_namespace n ON n.oid = t.typnamespace WHERE n.nspname = 'public' AND t.typcategory <> 'A'"
          + " AND (t.typrelid = 0 OR EXISTS (SELECT 1 FROM pg_class r WHERE r.oid = t.typrelid AND r.relkind = 'c'))")) {
        while (rs.next()) add(objects, rs.getString(2), rs.getString(1));
      }
    }
    for (Map.Entry<String, Set<String>> e : objects.entrySet()) e.setValue(Collections.unmodifiableSet(e.getValue()));
    Map<String, List<String>> cols = new LinkedHashMap<>();
    columns.forEach((t, l) -> cols.put(t, List.copyOf(l)));
    return new CatalogSchema(Collections.unmodifiableMap(cols), Collections.unmodifiableMap(tables), Collections.unmodifiableMap(sequences),
        Collections.unmodifiableMap(objects));
  }

  private static void add(Map<String, Set<String>> objects, String kind, String tag) {
    objects.computeIfAbsent(kind, k -> new TreeSet<>()).add(tag);
  }

  /** The tags {@code kind} (TABLE, INDEX, FK CONSTRAINT, …) may have: the objects of that kind in the schema. */
  Set<String> objects(String kind) {
    return objects.getOrDefault(kind, Set.of());
  }

  Set<String> tables() {
    return quotedTables.keySet();
  }

  Set<String> sequences() {
    return quotedSequences.keySet();
  }

  /** Exactly the line pg_dump writes before a table's data: {@code COPY public.t (a, b) FROM stdin;}. */
  String copyHeader(String table) {
    return "COPY public." + quotedTables.get(table) + " (" + String.join(", ", columns.get(table)) + ") FROM stdin;";
  }

  /** The literal pg_dump names a sequence with in {@code setval}: {@code 'public.s'}. */
  String sequenceLiteral(String sequence) {
    return "'" + ("public." + quotedSequences.get(sequence)).replace("'", "''") + "'";
  }

  /** {@code public.t}, quoted as SQL needs it. */
  String qualifiedTable(String table) {
    return "public." + quotedTables.get(table);
  }
}
