package io.meshplane.backup;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The objects a dump names ({@code pg_restore --list}), checked against the schema the migrations made:
 * an object of a kind or name that schema lacks (a FUNCTION, a TRIGGER, an unrelated table) refuses the
 * snapshot, and so does a dump that lacks one of the schema's tables or sequences. Nothing of the
 * dump's definitions is ever run; this check makes sure the dump is a dump of Meshplane and nothing else.
 */
final class ArchiveContents {
  /** An entry of the table of contents: its kind (pg_dump's desc), schema ("-" for none) and tag. */
  record Entry(String kind, String namespace, String tag) {
    String shown() {
      return kind + " " + (namespace.equals("-") ? "" : namespace + ".") + Printable.of(tag);
    }
  }

  private static final Pattern LINE = Pattern.compile("(\\d+); (\\d+) (\\d+) (.*)");
  /** pg_dump's kinds (its "desc"), the longest first so that "TABLE DATA" is not read as "TABLE". */
  private static final List<String> KINDS = List.of("ACCESS METHOD", "ACL", "AGGREGATE", "BLOB", "BLOB METADATA", "BLOBS", "CAST",
      "CHECK CONSTRAINT", "COLLATION", "COMMENT", "CONSTRAINT", "CONVERSION", "DATABASE", "DATABASE PROPERTIES", "DEFAULT", "DEFAULT ACL",
      "DOMAIN", "ENCODING", "EVENT TRIGGER", "EXTENSION", "FK CONSTRAINT", "FOREIGN DATA WRAPPER", "FOREIGN SERVER", "FOREIGN TABLE",
      "FUNCTION", "INDEX", "INDEX ATTACH", "LARGE OBJECT", "MATERIALIZED VIEW", "MATERIALIZED VIEW DATA", "OPERATOR", "OPERATOR CLASS",
      "OPERATOR FAMILY", "POLICY", "PROCEDURAL LANGUAGE", "PROCEDURE", "PUBLICATION", "PUBLICATION TABLE", "PUBLICATION TABLES IN SCHEMA",
      "ROW SECURITY", "RULE", "SCHEMA", "SEARCHPATH", "SECURITY LABEL", "SEQUENCE", "SEQUENCE OWNED BY", "SEQUENCE SET", "SERVER",
      "SHELL TYPE", "STATISTICS", "STATISTICS DATA", "STDSTRINGS", "SUBSCRIPTION", "SUBSCRIPTION TABLE", "TABLE", "TABLE ATTACH",
      "TABLE DATA", "TEXT SEARCH CONFIGURATION", "TEXT SEARCH DICTIONARY", "TEXT SEARCH PARSER", "TEXT SEARCH TEMPLATE", "TRANSFORM",
      "TRIGGER", "TYPE", "USER MAPPING", "VIEW").stream().sorted(Comparator.comparingInt(String::length).reversed()).toList();
  /** Kinds whose names are checked against the catalog's objects of the kind on the right. */
  private static final Map<String, String> CATALOG_KIND = Map.ofEntries(Map.entry("TABLE", "TABLE"), Map.entry("TABLE DATA", "TABLE"),
      Map.entry("SEQUENCE", "SEQUENCE"), Map.entry("SEQUENCE SET", "SEQUENCE"), Map.entry("SEQUENCE OWNED BY", "SEQUENCE"),
      Map.entry("INDEX", "INDEX"), Map.entry("CONSTRAINT", "CONSTRAINT"), Map.entry("FK CONSTRAINT", "FK CONSTRAINT"),
      Map.entry("CHECK CONSTRAINT", "CHECK CONSTRAINT"), Map.entry("DEFAULT", "DEFAULT"), Map.entry("FUNCTION", "FUNCTION"),
      Map.entry("PROCEDURE", "PROCEDURE"), Map.entry("AGGREGATE", "AGGREGATE"), Map.entry("TRIGGER", "TRIGGER"), Map.entry("VIEW", "VIEW"),
      Map.entry("MATERIALIZED VIEW", "MATERIALIZED VIEW"), Map.entry("MATERIALIZED VIEW DATA", "MATERIALIZED VIEW"),
      Map.entry("TYPE", "TYPE"), Map.entry("DOMAIN", "DOMAIN"));
  private static final int MAX_NAMED = 8;

  private ArchiveContents() {}

  /**
   * Reads {@code pg_restore --list}'s output, refusing at once (before the target is touched) the
   * objects no migrated schema could have: kinds other than those {@link #check} compares with the
   * catalog, and objects outside schema public.
   */
  static List<Entry> parse(Path listFile) throws IOException {
    List<Entry> entries = new ArrayList<>();
    int n = 0;
    for (String line : Files.readAllLines(listFile, StandardCharsets.UTF_8)) {
      n++;
      if (line.isBlank() || line.startsWith(";")) continue;
      Matcher m = LINE.matcher(line);
      if (!m.matches()) throw new Refused("the dump's table of contents has a line this restore does not understand (" + n + "): " + Printable.of(line));
      String rest = m.group(4);
      String kind = null;
      for (String k : KINDS) {
        if (rest.startsWith(k + " ")) {
          kind = k;
          break;
        }
      }
      if (kind == null) throw new Refused("the dump holds an object of a kind Meshplane's schema never has: " + Printable.of(rest));
      rest = rest.substring(kind.length() + 1);
      int sp = rest.indexOf(' ');
      if (sp < 0) throw new Refused("the dump's table of contents has a line this restore does not understand (" + n + "): " + Printable.of(line));
      String namespace = rest.substring(0, sp);
      String tagAndOwner = rest.substring(sp + 1);
      int last = tagAndOwner.lastIndexOf(' ');
      String tag = last < 0 ? tagAndOwner : tagAndOwner.substring(0, last);
      entries.add(new Entry(kind, namespace, tag));
    }
    List<String> never = new ArrayList<>();
    for (Entry e : entries) {
      boolean schemaPublic = e.kind().equals("SCHEMA") || e.kind().equals("COMMENT");
      if (schemaPublic ? !expected(e, null) : !CATALOG_KIND.containsKey(e.kind()) || !e.namespace().equals("public")) never.add(e.shown());
    }
    if (!never.isEmpty()) {
      throw new Refused("the dump holds " + named(never) + ", of a kind or schema Meshplane's never has: not a snapshot of Meshplane's"
          + " database, or one altered after it was taken");
    }
    return entries;
  }

  /**
   * Refuses (naming them) the entries the schema lacks, duplicated entries, and a dump without one of
   * the schema's tables or sequences, or without their data.
   */
  static void check(List<Entry> entries, CatalogSchema schema, int version) {
    List<String> unexpected = new ArrayList<>();
    Set<Entry> seen = new HashSet<>();
    for (Entry e : entries) {
      if (!seen.add(e)) {
        unexpected.add(e.shown() + " (twice)");
      } else if (!expected(e, schema)) {
        unexpected.add(e.shown());
      }
    }
    if (!unexpected.isEmpty()) {
      throw new Refused("the dump holds " + named(unexpected) + ", which Meshplane's schema (version " + version + ") does not have:"
          + " not a snapshot of Meshplane's database, or one altered after it was taken");
    }
    List<String> missing = new ArrayList<>();
    for (String t : schema.tables()) {
      if (!seen.contains(new Entry("TABLE", "public", t))) missing.add("TABLE public." + t);
      else if (!seen.contains(new Entry("TABLE DATA", "public", t))) missing.add("TABLE DATA public." + t);
    }
    for (String s : schema.sequences()) {
      if (!seen.contains(new Entry("SEQUENCE", "public", s))) missing.add("SEQUENCE public." + s);
      else if (!seen.contains(new Entry("SEQUENCE SET", "public", s))) missing.add("SEQUENCE SET public." + s);
    }
    if (!missing.isEmpty()) {
      throw new Refused("the dump lacks " + named(missing) + " of Meshplane's schema (version " + version + "): not a whole snapshot of Meshplane's"
          + " database");
    }
  }

  private static boolean expected(Entry e, CatalogSchema schema) {
    if (e.kind().equals("SCHEMA")) return e.namespace().equals("-") && e.tag().equals("public");
    if (e.kind().equals("COMMENT")) return e.namespace().equals("-") && e.tag().equals("SCHEMA public");
    String catalogKind = CATALOG_KIND.get(e.kind());
    return catalogKind != null && e.namespace().equals("public") && schema.objects(catalogKind).contains(e.tag());
  }

  private static String named(List<String> names) {
    String shown = String.join(", ", names.size() > MAX_NAMED ? names.subList(0, MAX_NAMED) : names);
    return shown + (names.size() > MAX_NAMED ? " and " + (names.size() - MAX_NAMED) + " more" : "");
  }
}
