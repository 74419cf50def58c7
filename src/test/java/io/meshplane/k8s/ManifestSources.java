package io.meshplane.k8s;

import static io.meshplane.k8s.Manifests.*;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.meshplane.module.Module;
import java.io.IOException;
import java.lang.reflect.Constructor;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * What the manifests are checked against besides themselves: the alert rules, the code (metric names,
 * modules and their stop timeouts) and docs/OPERATIONS.md (anchors, tables).
 */
final class ManifestSources {
  private ManifestSources() {}

  /** The alerts the issue names: each must exist (and, like every alert, have unit tests). */
  static final Set<String> REQUIRED_ALERTS = Set.of("MeshplaneNodesStale", "MeshplaneWriteBehindBacklogGrowing", "MeshplaneRowsQuarantined",
      "MeshplaneAuthFailureBurst", "MeshplanePolicyDrift", "MeshplaneReplicasBelowQuorum");

  /** The alert names of alerts.rules.yml (prometheus-rules.yaml carries the same groups: checked above). */
  static Set<String> alertNames() throws IOException {
    Set<String> names = new TreeSet<>();
    for (Object g : list(yaml(K8S.resolve("alerts.rules.yml")).get("groups"))) {
      for (Object r : list(map(g).get("rules"))) {
        if (map(r).get("alert") != null) names.add((String) map(r).get("alert"));
      }
    }
    assertFalse(names.isEmpty(), "no alert in alerts.rules.yml");
    return names;
  }

  static List<Map<String, Object>> rules() {
    List<Map<String, Object>> rules = new ArrayList<>();
    for (Object g : list(get(one("PrometheusRule").body(), "spec.groups"))) {
      for (Object r : list(map(g).get("rules"))) rules.add(map(r));
    }
    return rules;
  }

  // ---- the code ----------------------------------------------------------------------------------

  static String source(String path) throws IOException {
    return Files.readString(Path.of("src/main/java/io/meshplane").resolve(path));
  }

  /**
   * The metric families the replicas register (Micrometer names in the sources, as Prometheus names:
   * dots become underscores, counters get _total). kube-state-metrics' families are not Meshplane's.
   */
  static Set<String> metricNames() throws IOException {
    Set<String> names = new TreeSet<>();
    Pattern builder = Pattern.compile("(Counter|Gauge|DistributionSummary|Timer)\\.builder\\(\"((?:mesh|hazelcast)\\.[a-z.]+)\"");
    try (Stream<Path> files = Files.walk(Path.of("src/main/java"))) {
      for (Path f : files.filter(p -> p.toString().endsWith(".java")).toList()) {
        Matcher m = builder.matcher(Files.readString(f));
        while (m.find()) {
          String name = m.group(2).replace('.', '_');
          names.add(m.group(1).equals("Counter") ? name + "_total" : name);
        }
      }
    }
    assertTrue(names.contains("mesh_nodes") && names.contains("mesh_auth_failures_total"), "metric names found: " + names);
    return names;
  }

  static List<Class<?>> moduleClasses() throws Exception {
    Path classes = Path.of(Module.class.getProtectionDomain().getCodeSource().getLocation().toURI());
    List<Class<?>> modules = new ArrayList<>();
    try (Stream<Path> files = Files.walk(classes)) {
      for (Path f : files.filter(p -> p.toString().endsWith("Module.class")).toList()) {
        String name = classes.relativize(f).toString().replace('/', '.').replaceAll("\\.class$", "");
        Class<?> c = Class.forName(name, false, ManifestSources.class.getClassLoader());
        if (Module.class.isAssignableFrom(c) && !c.isInterface()) modules.add(c);
      }
    }
    assertTrue(modules.size() >= 5, "modules found: " + modules);
    return modules;
  }

  static boolean declares(Class<?> c, String method) {
    try {
      c.getDeclaredMethod(method);
      return true;
    } catch (NoSuchMethodException e) {
      return false;
    }
  }

  /** A module's stopTimeout(), read from the class without building the module (it needs a running replica). */
  static Duration stopTimeout(Class<?> module) throws Exception {
    @SuppressWarnings("removal")
    Constructor<?> bare = sun.reflect.ReflectionFactory.getReflectionFactory()
        .newConstructorForSerialization(module, Object.class.getDeclaredConstructor());
    return ((Module) bare.newInstance()).stopTimeout();
  }

  // ---- docs/OPERATIONS.md ------------------------------------------------------------------------

  /** GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens, repeats numbered. */
  static Set<String> anchors(String markdown) {
    Set<String> anchors = new LinkedHashSet<>();
    Map<String, Integer> seen = new HashMap<>();
    boolean fenced = false;
    for (String line : markdown.split("\n")) {
      if (line.startsWith("```")) fenced = !fenced;
      if (fenced || !line.matches("^#{1,6} .*")) continue;
      String slug = line.replaceFirst("^#+ ", "").trim().toLowerCase(Locale.ROOT)
          .replaceAll("[^\\p{L}\\p{N} _-]", "").replace(' ', '-');
      int n = seen.merge(slug, 1, Integer::sum);
      anchors.add(n == 1 ? slug : slug + "-" + (n - 1));
    }
    return anchors;
  }

  /**
   * The body rows of the one Markdown table whose header starts with the given cells, each row as its
   * cells (trimmed, backticks kept). A cell with a | in it is not split correctly: none of the first
   * cells the tests read has one.
   */
  static List<List<String>> markdownTable(String markdown, String... header) {
    List<List<List<String>>> tables = new ArrayList<>();
    List<List<String>> current = null;
    boolean inTable = false;
    boolean fenced = false;
    for (String line : markdown.split("\n")) {
      if (line.startsWith("```")) fenced = !fenced;
      if (fenced || !line.startsWith("|")) {
        inTable = false;
        continue;
      }
      List<String> cells = Stream.of(line.trim().replaceAll("^\\||\\|$", "").split("\\|", -1)).map(String::trim).toList();
      if (!inTable) {
        // a table's first line is its header
        inTable = true;
        current = cells.size() >= header.length && cells.subList(0, header.length).equals(List.of(header)) ? new ArrayList<>() : null;
        if (current != null) tables.add(current);
      } else if (current != null && !cells.stream().allMatch(c -> c.matches(":?-+:?"))) {
        current.add(cells);
      }
    }
    assertEquals(1, tables.size(), "tables in docs/OPERATIONS.md whose header starts with " + List.of(header));
    assertFalse(tables.get(0).isEmpty(), "the table " + List.of(header) + " of docs/OPERATIONS.md has no rows");
    return tables.get(0);
  }
}
