package io.meshplane;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static com.tngtech.archunit.library.dependencies.SlicesRuleDefinition.slices;
import static org.junit.jupiter.api.Assertions.assertEquals;

import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The layout, enforced rather than hoped for (docs/ARCHITECTURE.md, "Who may import whom"): features
 * are rooms with front doors. Checked on the compiled production classes.
 */
class ArchitectureTest {
  /** The feature packages: each owns its routes, logic and SQL. */
  static final String[] FEATURES = {"io.meshplane.auth..", "io.meshplane.audit..", "io.meshplane.node..", "io.meshplane.heartbeat..",
      "io.meshplane.ops..", "io.meshplane.policy..", "io.meshplane.panel.."};
  static JavaClasses classes;

  @BeforeAll
  static void importClasses() {
    classes = new ClassFileImporter().withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS).importPackages("io.meshplane");
  }

  @Test
  void noCyclesBetweenPackages() {
    slices().matching("io.meshplane.(*)..").should().beFreeOfCycles().check(classes);
  }

  @Test
  void noFeatureImportsTheWiringPoint() {
    noClasses().that().resideInAnyPackage(FEATURES).or().resideInAnyPackage("io.meshplane.common..", "io.meshplane.access..",
            "io.meshplane.http..", "io.meshplane.module..", "io.meshplane.observe..")
        .should().dependOnClassesThat().resideInAPackage("io.meshplane.app..")
        .check(classes);
  }

  @Test
  void onlyHttpAndTheRouteLayerTouchVertxWeb() {
    noClasses().that().resideOutsideOfPackage("io.meshplane.http..").and().haveSimpleNameNotEndingWith("Routes")
        .should().dependOnClassesThat().resideInAPackage("io.vertx.ext.web..")
        .check(classes);
  }

  @Test
  void theAuditTrailImportsNoFeature() {
    noClasses().that().resideInAPackage("io.meshplane.audit..")
        .should().dependOnClassesThat().resideInAnyPackage("io.meshplane.auth..", "io.meshplane.node..", "io.meshplane.heartbeat..",
            "io.meshplane.ops..", "io.meshplane.policy..", "io.meshplane.panel..")
        .check(classes);
  }

  @Test
  void sharedPackagesImportNoFeature() {
    noClasses().that().resideInAnyPackage("io.meshplane.common..", "io.meshplane.access..", "io.meshplane.http..",
            "io.meshplane.module..", "io.meshplane.observe..")
        .should().dependOnClassesThat().resideInAnyPackage(FEATURES)
        .check(classes);
  }

  @Test
  void servicesAndRepositoriesTakeValuesNotHttp() {
    noClasses().that().haveSimpleNameEndingWith("Service").or().haveSimpleNameEndingWith("Repository")
        .should().dependOnClassesThat().resideInAnyPackage("io.vertx.ext.web..", "io.vertx.core.http..")
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
}
