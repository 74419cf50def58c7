package io.meshplane;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * Shared state has one owner (docs/ARCHITECTURE.md, "Who owns which table"): every SQL statement of
 * the production code that writes a table (INSERT, UPDATE, DELETE) lives in the feature that owns the
 * table, and for {@code nodes}, which three features write, in the feature that owns each column it
 * sets. The change log's two tables are written only by the changes package: the heartbeat's
 * statements append to it through its constants ({@code ChangeLog.CLOCK_CTE}, {@code INSERT_ENTRY}),
 * which this scan does not see as the heartbeat's own SQL. The snapshot tool ({@code backup}) restores
 * every table whole and is not a feature here.
 */
class TableOwnershipTest {
  /** Table -> its owner (a package under io.meshplane); {@code nodes} is owned per column, below. */
  static final Map<String, String> OWNER = Map.ofEntries(
      Map.entry("mesh_changes", "changes"), Map.entry("mesh_clock", "changes"),
      Map.entry("node_events", "heartbeat"),
      Map.entry("meshca_authorities", "meshca"), Map.entry("meshca_certificates", "meshca"), Map.entry("meshca_rotations", "meshca"), Map.entry("meshca_intermediate_requests", "meshca"),
      Map.entry("operations", "ops"), Map.entry("ingress_hostnames", "ops"),
      Map.entry("acl_policies", "policy"),
      Map.entry("ingress_routes", "ingress"), Map.entry("waf_policies", "wafpolicy"), Map.entry("ingress_versions", "ingress"),
      Map.entry("tokens", "auth"),
      Map.entry("audit_events", "audit"),
      Map.entry("users", "panel"),
      Map.entry("mesh_meta", "app"));
  /** The features that insert and delete {@code nodes} rows, and the columns each may set. */
  static final String NODES_ROWS = "node";
  static final Map<String, Set<String>> NODES_COLUMNS = Map.of(
      "node", Set.of("tags", "updated_at"),
      "heartbeat", Set.of("endpoints", "routes", "reported_relay", "reported_key", "telemetry", "heartbeat_at", "stale", "heard",
          "flush_changes", "acknowledged_peers", "acknowledged_acl", "acknowledged_at"),
      "ops", Set.of("relay", "services", "ingress", "updated_at"));
  static final Set<String> NOT_FEATURES = Set.of("backup");

  private static final Pattern WRITE = Pattern.compile("(?i)\\b(INSERT\\s+INTO|DELETE\\s+FROM|UPDATE)\\s+([a-z_]+)(?:\\s+(?!SET\\b)[a-z]+)?\\s*(SET\\b)?");

  @Test
  void everyWriteIsMadeByTheOwnerOfWhatItWrites() throws IOException {
    List<String> violations = new ArrayList<>();
    Set<String> seen = new TreeSet<>();
    Path root = Path.of("src/main/java/io/meshplane");
    try (Stream<Path> files = Files.walk(root)) {
      for (Path f : files.filter(p -> p.toString().endsWith(".java")).toList()) {
        Path rel = root.relativize(f);
        if (rel.getNameCount() < 2) continue; // Main
        String pkg = rel.getName(0).toString();
        if (NOT_FEATURES.contains(pkg)) continue;
        String text = Files.readString(f).replaceAll("\"\\s*\\+\\s*\"", "");
        Matcher m = WRITE.matcher(text);
        while (m.find()) {
          String verb = m.group(1).toUpperCase().replaceAll("\\s+", " ");
          String table = m.group(2);
          if (verb.equals("UPDATE") && m.group(3) == null) continue; // prose, not SQL
          String where = rel + ": " + verb + " " + table;
          seen.add(pkg + " " + verb + " " + table);
          if (table.equals("nodes")) {
            if (!verb.equals("UPDATE")) {
              if (!pkg.equals(NODES_ROWS)) violations.add(where + " (only " + NODES_ROWS + " inserts and deletes nodes)");
              continue;
            }
            Set<String> mine = NODES_COLUMNS.getOrDefault(pkg, Set.of());
            for (String column : setColumns(text, m.end())) {
              if (!mine.contains(column)) violations.add(where + " SET " + column + " (not a column " + pkg + " owns)");
            }
            continue;
          }
          String owner = OWNER.get(table);
          if (owner == null) {
            violations.add(where + " (a table without a declared owner: add it to OWNER and to ARCHITECTURE.md)");
          } else if (!owner.equals(pkg)) {
            violations.add(where + " (owned by " + owner + ")");
          }
        }
      }
    }
    assertEquals(List.of(), violations, "writes outside their owner");
    // the scan sees what it must: the writes of every owner (a scan that finds nothing proves nothing)
    for (String expected : List.of("changes INSERT INTO mesh_changes", "changes UPDATE mesh_clock", "node INSERT INTO nodes",
        "node DELETE FROM nodes", "heartbeat UPDATE nodes", "ops UPDATE nodes", "heartbeat INSERT INTO node_events",
        "auth INSERT INTO tokens", "audit INSERT INTO audit_events", "policy INSERT INTO acl_policies", "panel INSERT INTO users",
        "ops INSERT INTO operations")) {
      assertTrue(seen.contains(expected), "the scan did not find " + expected + " (found " + seen + ")");
    }
  }

  /** The columns an UPDATE's SET list assigns: its top-level comma-separated parts up to FROM/WHERE/RETURNING or the string's end. */
  static List<String> setColumns(String text, int from) {
    List<String> out = new ArrayList<>();
    int depth = 0;
    StringBuilder part = new StringBuilder();
    for (int i = from; i < text.length(); i++) {
      char c = text.charAt(i);
      if (c == '"' && depth == 0) break;
      if (depth == 0 && (startsWord(text, i, "FROM") || startsWord(text, i, "WHERE") || startsWord(text, i, "RETURNING"))) break;
      if (c == '(') depth++;
      if (c == ')') depth--;
      if (c == ',' && depth == 0) {
        column(part, out);
        part.setLength(0);
      } else {
        part.append(c);
      }
    }
    column(part, out);
    return out;
  }

  private static void column(CharSequence part, List<String> out) {
    Matcher m = Pattern.compile("^\\s*([a-z_]+)\\s*=").matcher(part);
    if (m.find()) out.add(m.group(1));
  }

  private static boolean startsWord(String text, int i, String word) {
    return text.regionMatches(true, i, word, 0, word.length()) && (i == 0 || !Character.isLetterOrDigit(text.charAt(i - 1)))
        && (i + word.length() >= text.length() || !Character.isLetterOrDigit(text.charAt(i + word.length())));
  }
}
