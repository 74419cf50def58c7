package io.meshplane;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static com.tngtech.archunit.library.dependencies.SlicesRuleDefinition.slices;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.tngtech.archunit.core.domain.JavaClass;
import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The layout, enforced rather than hoped for (docs/ARCHITECTURE.md, "Who may import whom"): features
 * are rooms with front doors. Checked on the compiled production classes. The rules name the shared
 * packages and the wiring point only: every other package under {@code io.meshplane} is a feature,
 * found in the classes themselves, so a new package is held to the rules from its first class.
 */
class ArchitectureTest {
  static final String ROOT = "io.meshplane";
  /** The wiring point: configuration, start, shutdown. Nothing but {@link Main} imports it. */
  static final String APP = "app";
  /**
   * The shared packages: they know no feature (ARCHITECTURE.md, "Packages"). {@code waf} is one: the
   * same evaluation decides in the coordinator (policy tests, preview) and in the agent's edge.
   */
  static final Set<String> SHARED = Set.of("common", "access", "http", "module", "observe", "waf");
  static JavaClasses classes;
  /** Every package directly under {@code io.meshplane} that is neither shared nor {@code app}: the features. */
  static Set<String> features;

  @BeforeAll
  static void importClasses() {
    classes = new ClassFileImporter().withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS).importPackages(ROOT);
    Set<String> top = new TreeSet<>();
    for (JavaClass c : classes) {
      String p = c.getPackageName();
      if (!p.startsWith(ROOT + ".")) continue; // Main, in io.meshplane itself
      String rest = p.substring(ROOT.length() + 1);
      top.add(rest.contains(".") ? rest.substring(0, rest.indexOf('.')) : rest);
    }
    assertTrue(top.containsAll(SHARED) && top.contains(APP), "a shared package or app/ was renamed: update SHARED (and ARCHITECTURE.md); found " + top);
    features = new TreeSet<>(top);
    features.removeAll(SHARED);
    features.remove(APP);
    assertTrue(features.size() >= 2, "no features found in " + top);
  }

  static String[] packages(Set<String> names) {
    return names.stream().map(n -> ROOT + "." + n + "..").toArray(String[]::new);
  }

  @Test
  void noCyclesBetweenPackages() {
    slices().matching("io.meshplane.(*)..").should().beFreeOfCycles().check(classes);
  }

  /** Whatever the package, a new one included: only {@code Main} imports the wiring point. */
  @Test
  void nothingButMainImportsTheWiringPoint() {
    noClasses().that().resideOutsideOfPackage(ROOT + "." + APP + "..").and().doNotBelongToAnyOf(Main.class)
        .should().dependOnClassesThat().resideInAPackage(ROOT + "." + APP + "..")
        .check(classes);
  }

  @Test
  void onlyHttpAndTheRouteLayerTouchVertxWeb() {
    noClasses().that().resideOutsideOfPackage("io.meshplane.http..").and().haveSimpleNameNotEndingWith("Routes")
        .should().dependOnClassesThat().resideInAPackage("io.vertx.ext.web..")
        .check(classes);
  }

  /**
   * The wiring point never names Vert.x Web, not even in a cast or a fully qualified name (which the
   * compiled classes may not show as a dependency): the dashboard and the routers are http/'s to build.
   */
  @Test
  void theWiringPointNeverNamesVertxWeb() throws IOException {
    noClasses().that().resideInAPackage(ROOT + "." + APP + "..")
        .should().dependOnClassesThat().resideInAPackage("io.vertx.ext.web..")
        .check(classes);
    List<String> offenders = new ArrayList<>();
    try (Stream<Path> files = Files.walk(Path.of("src/main/java/io/meshplane", APP))) {
      for (Path f : files.filter(p -> p.toString().endsWith(".java")).toList()) {
        if (Files.readString(f).contains("io.vertx.ext.web")) offenders.add(f.toString());
      }
    }
    assertEquals(List.of(), offenders);
  }

  /**
   * The WAF evaluation is a library both the coordinator and the edge embed: it reaches nothing of
   * Meshplane but {@code common}, and of the outside only the JDK, CEL and what CEL's API hands it
   * (RE2J patterns, the Guava lists of its AST). No Vert.x, no HTTP, no Hazelcast, no database.
   */
  @Test
  void theWafDependsOnCommonTheJdkAndCelOnly() {
    com.tngtech.archunit.lang.syntax.ArchRuleDefinition.classes().that().resideInAPackage(ROOT + ".waf..")
        .should().onlyDependOnClassesThat().resideInAnyPackage(ROOT + ".waf..", ROOT + ".common..", "java..", "dev.cel..",
            "com.google.re2j..", "com.google.common.collect..")
        .check(classes);
  }

  @Test
  void theAuditTrailImportsNoOtherFeature() {
    Set<String> others = new TreeSet<>(features);
    others.remove("audit");
    noClasses().that().resideInAPackage("io.meshplane.audit..")
        .should().dependOnClassesThat().resideInAnyPackage(packages(others))
        .check(classes);
  }

  @Test
  void sharedPackagesImportNoFeature() {
    noClasses().that().resideInAnyPackage(packages(SHARED))
        .should().dependOnClassesThat().resideInAnyPackage(packages(features))
        .check(classes);
  }

  /** Services and repositories take values ({@code common.Page}, {@code RequestInfo}, records), never HTTP or the HTTP layer. */
  @Test
  void servicesAndRepositoriesTakeValuesNotHttp() {
    noClasses().that().haveSimpleNameEndingWith("Service").or().haveSimpleNameEndingWith("Repository")
        .should().dependOnClassesThat().resideInAnyPackage("io.vertx.ext.web..", "io.vertx.core.http..", "io.meshplane.http..")
        .check(classes);
  }

  /** One helper writes the scope filter of every scoped read ({@code Sql.inScope}); nobody spells it out again. */
  @Test
  void theScopeFilterIsWrittenOnce() throws IOException {
    List<String> offenders = new ArrayList<>();
    try (Stream<Path> files = Files.walk(Path.of("src/main/java"))) {
      for (Path f : files.filter(p -> p.toString().endsWith(".java")).toList()) {
        if (f.endsWith(Path.of("common", "Sql.java"))) continue;
        if (Files.readString(f).contains("= '*' OR team")) offenders.add(f.toString());
      }
    }
    assertEquals(List.of(), offenders);
  }

  /**
   * Route classes parse, call a service and answer: no repository, verticle, batcher, model or map of
   * live state, no SQL client and no Hazelcast (a workflow that needs those belongs in a service).
   */
  @Test
  void routesCallServicesOnly() {
    noClasses().that().haveSimpleNameEndingWith("Routes")
        .should().dependOnClassesThat().haveSimpleNameEndingWith("Repository")
        .orShould().dependOnClassesThat().haveSimpleNameEndingWith("Verticle")
        .orShould().dependOnClassesThat().haveSimpleNameEndingWith("Batcher")
        .orShould().dependOnClassesThat().haveSimpleNameEndingWith("Model")
        .orShould().dependOnClassesThat().haveSimpleNameEndingWith("State")
        .orShould().dependOnClassesThat().resideInAnyPackage("io.vertx.sqlclient..", "io.vertx.pgclient..", "com.hazelcast..")
        .check(classes);
  }

  /**
   * A feature reaches another only through what that feature declares for it: its module, an interface
   * (NodePolicy, NodeWork, LiveNodes, ChangeLog.Feed, ...) or a value it hands out (a record, an enum),
   * and the few classes below that are its declared doors (the audit log everyone records in, the
   * formats of node data, the key rule). Never another feature's service, repository or verticle.
   */
  @Test
  void featuresMeetThroughDeclaredDoors() {
    Set<String> doors = Set.of("io.meshplane.audit.AuditLog", "io.meshplane.node.NodeFormats", "io.meshplane.node.NodeKeys",
        "io.meshplane.node.Telemetry", "io.meshplane.changes.ChangeLog");
    List<String> violations = new ArrayList<>();
    for (JavaClass c : classes) {
      String from = feature(c);
      if (from == null) continue;
      c.getDirectDependenciesFromSelf().forEach(d -> {
        JavaClass t = d.getTargetClass();
        String to = feature(t);
        if (to == null || to.equals(from)) return;
        JavaClass top = t.getEnclosingClass().orElse(t);
        while (top.getEnclosingClass().isPresent()) top = top.getEnclosingClass().get();
        boolean door = t.isInterface() || t.isRecord() || t.isEnum() || t.getSimpleName().endsWith("Module")
            || doors.contains(top.getName()) || top.getSimpleName().endsWith("Module");
        if (!door) violations.add(c.getName() + " -> " + t.getName());
      });
    }
    assertEquals(List.of(), violations.stream().distinct().sorted().toList());
  }

  /**
   * A class is public only when something outside its package uses it (production code, or a test in
   * another package): the rest are package-private, so a feature's insides cannot be reached at all.
   */
  @Test
  void publicClassesAreUsedOutsideTheirPackage() {
    JavaClasses all = new ClassFileImporter().importPackages(ROOT);
    List<String> unused = new ArrayList<>();
    for (JavaClass c : classes) {
      if (!c.getModifiers().contains(com.tngtech.archunit.core.domain.JavaModifier.PUBLIC) || c.isNestedClass() || c.isAnonymousClass()) {
        continue;
      }
      if (c.getPackageName().equals(ROOT)) continue; // Main
      // used outside only through a compile-time constant (Problems.MEDIA_TYPE), which javac inlines: no dependency shows
      if (c.getName().equals("io.meshplane.http.Problems")) continue;
      // named in logback.xml and instantiated by Logback, which needs a public class
      if (c.isAssignableTo(ch.qos.logback.classic.turbo.TurboFilter.class)) continue;
      boolean outside = all.stream().anyMatch(o -> !o.getPackageName().equals(c.getPackageName())
          && o.getDirectDependenciesFromSelf().stream().anyMatch(d -> top(d.getTargetClass()).getName().equals(c.getName())));
      if (!outside) unused.add(c.getName());
    }
    assertEquals(List.of(), unused.stream().sorted().toList(), "public classes nothing outside their package uses: make them package-private");
  }

  private static JavaClass top(JavaClass c) {
    JavaClass t = c;
    while (t.getEnclosingClass().isPresent()) t = t.getEnclosingClass().get();
    return t;
  }

  /** The feature a class belongs to, or null for shared packages, app and Main. */
  static String feature(JavaClass c) {
    String p = c.getPackageName();
    if (!p.startsWith(ROOT + ".")) return null;
    String rest = p.substring(ROOT.length() + 1);
    String top = rest.contains(".") ? rest.substring(0, rest.indexOf('.')) : rest;
    return features.contains(top) ? top : null;
  }
}
